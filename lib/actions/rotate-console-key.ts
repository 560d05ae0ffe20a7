"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";

import { actionFailure, type ActionResult } from "./action-result";
import { currentActor } from "@/lib/auth/actor";
import { rotateConsoleKey } from "@/lib/console-key/rotate";
import { getDb } from "@/lib/db/client";

export type RotateConsoleKeyResult = ActionResult<{
  rotationId: string;
  runId: string;
  hostCount: number;
}>;

/** No options: the button only confirms. An unexpected payload is bad input, not ignored. */
const ZRotateInput = z.object({}).strict();

/** Starts a key rotation (admin); its progress shows live on the SSH key page. */
export async function rotateConsoleKeyAction(input: unknown = {}): Promise<RotateConsoleKeyResult> {
  try {
    const actor = await currentActor("admin");
    ZRotateInput.parse(input);
    const started = await rotateConsoleKey(getDb(), actor);
    revalidatePath("/settings/ssh-key");
    return {
      ok: true,
      rotationId: started.rotationId,
      runId: started.runId,
      hostCount: started.hostCount,
    };
  } catch (error) {
    return actionFailure(error, "rotate console key");
  }
}
