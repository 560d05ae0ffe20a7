"use server";

import { z } from "zod";
import { rotateConsoleKey } from "@/lib/console-key/rotate";
import { getDb } from "@/lib/db/client";
import { buttonAction } from "./action";
import type { ActionResult } from "./action-result";

export type RotateConsoleKeyResult = ActionResult<{
  rotationId: string;
  runId: string;
  hostCount: number;
}>;

/** Starts a key rotation (admin); its progress shows live on the SSH key page. */
export const rotateConsoleKeyAction = buttonAction(
  {
    name: "rotate console key",
    role: "admin",
    // No options: the button only confirms. An unexpected payload is bad input, not ignored.
    schema: z.object({}).strict(),
    revalidate: ["/settings/ssh-key"],
  },
  async ({ actor }) => {
    const { rotationId, runId, hostCount } = await rotateConsoleKey(getDb(), actor);
    return { rotationId, runId, hostCount };
  },
);
