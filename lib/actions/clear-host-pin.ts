"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { clearHostPin, ZClearHostPin } from "@/lib/hosts/clear-host-pin";
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
    const db = getDb();
    const { cleared } = await audited(
      db,
      { actor, action: "host.clear_pin", target: `host:${hostId}`, detail: { fingerprint } },
      () => clearHostPin(db, { hostId, actor: actor.name, fingerprint }),
    );
    revalidatePath("/hosts", "layout");
    return { ok: true, cleared };
  } catch (error) {
    return actionFailure(error, "clear host key pin");
  }
}
