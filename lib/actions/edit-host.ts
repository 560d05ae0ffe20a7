"use server";

import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { auditedHostEdit, ZEditHost, type EditHostResult } from "@/lib/hosts/edit-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type EditHostActionResult = ActionResult<Omit<EditHostResult, "hostId">>;

/**
 * Saves a host's connection settings after a live connection test (lib/hosts/edit-host.ts).
 * Shaped for `useActionState`. The audit entry names the settings, never the secret.
 */
export const editHostAction = formAction(
  {
    name: "edit host",
    role: "operator",
    schema: z.object({ hostId: ZHostId }).and(ZEditHost),
    revalidate: [["/hosts", "layout"]],
  },
  async ({ actor, input: { hostId, ...edit } }) => {
    const { hostId: _id, ...result } = await auditedHostEdit(getDb(), actor, { hostId, edit });
    void _id;
    return result;
  },
);
