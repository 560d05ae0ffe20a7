"use server";

import { revalidatePath } from "next/cache";
import { getDb } from "@/lib/db/client";
import { createHost } from "@/lib/hosts/create-host";
import { ZCreateHost } from "@/lib/hosts/schemas";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
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
    const db = getDb();
    const { hostId, runId } = await audited(
      db,
      {
        actor,
        action: "host.create",
        target: (created) => `host:${created.hostId}`,
        detail: { name: parsed.name },
      },
      () => createHost(db, parsed, actor.name),
    );
    revalidatePath("/hosts");
    return { ok: true, hostId, runId };
  } catch (error) {
    return actionFailure(error, "create host");
  }
}
