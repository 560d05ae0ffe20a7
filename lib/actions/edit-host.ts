"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { auditedHostEdit, ZEditHost, type EditHostResult } from "@/lib/hosts/edit-host";
import { ZHostId } from "@/lib/hosts/schemas";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type EditHostActionResult = ActionResult<Omit<EditHostResult, "hostId">>;

/**
 * Saves a host's connection settings after a live connection test (lib/hosts/edit-host.ts).
 * Shaped for `useActionState`. The audit entry names the settings, never the secret.
 */
export async function editHostAction(
  _previous: EditHostActionResult | null,
  input: FormData | Record<string, unknown>,
): Promise<EditHostActionResult> {
  try {
    const actor = await currentActor("operator");
    const object = inputObject(input);
    const { hostId } = z.object({ hostId: ZHostId }).parse(object);
    const edit = ZEditHost.parse(object);
    const { hostId: _id, ...result } = await auditedHostEdit(getDb(), actor, { hostId, edit });
    void _id;
    revalidatePath("/hosts", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "edit host");
  }
}
