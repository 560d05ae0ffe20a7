"use server";

import { revalidatePath } from "next/cache";
import { getDb } from "@/lib/db/client";
import { auditedHostCreation } from "@/lib/hosts/create-host";
import { ZCreateHost } from "@/lib/hosts/schemas";
import { currentActor } from "@/lib/auth/actor";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type CreateHostResult = ActionResult<{ hostId: string; runId: string }>;

/**
 * Adds a host and starts its onboarding. Shaped for `useActionState` (previous state first);
 * takes the form's FormData or a plain object.
 */
export async function createHostAction(
  _previous: CreateHostResult | null,
  input: FormData | Record<string, unknown>,
): Promise<CreateHostResult> {
  try {
    const actor = await currentActor("operator");
    const parsed = ZCreateHost.parse(inputObject(input));
    const { hostId, runId } = await auditedHostCreation(getDb(), actor, parsed);
    revalidatePath("/hosts");
    return { ok: true, hostId, runId };
  } catch (error) {
    return actionFailure(error, "create host");
  }
}
