"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { auditedHostPinClearing, ZClearHostPin } from "@/lib/hosts/clear-host-pin";
import { ZHostId } from "@/lib/hosts/schemas";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

/**
 * Clears the host key pin the operator confirmed (its fingerprint comes with the request).
 * An operator's action, like a re-onboard after a reinstall: it is the routine next step then,
 * it only lets the next connection trust a key, and that connection still needs a valid
 * credential. It is audited on its own with the cleared fingerprint.
 */
export async function clearHostPinAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<{ cleared: string }>> {
  try {
    const actor = await currentActor("operator");
    const object = inputObject(input);
    const { hostId } = z.object({ hostId: ZHostId }).parse(object);
    const { fingerprint } = ZClearHostPin.parse(object);
    const { cleared } = await auditedHostPinClearing(getDb(), actor, { hostId, fingerprint });
    revalidatePath("/hosts", "layout");
    return { ok: true, cleared };
  } catch (error) {
    return actionFailure(error, "clear host key pin");
  }
}
