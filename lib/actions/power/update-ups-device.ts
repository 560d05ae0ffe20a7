"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { updateUpsDevice } from "@/lib/power/ups-devices";
import { ZUpdateUpsDevice } from "@/lib/power/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Changes a UPS; a secret left empty keeps the stored one. Admins only; audited. While armed, a
 * change to the plan is saved only once confirmed (`confirmPlanChange`); until then the result
 * shows what it changes.
 */
export async function updateUpsDeviceAction(
  _previous: ActionResult<ConfigChangeResult> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      schema: ZUpdateUpsDevice,
      // The form shows every override: one left with none clears them all.
      extra: (fields) => ({ triggerOverrides: fields.triggerOverrides ?? {} }),
      change: (db, data, by) => updateUpsDevice(db, data, by),
      idOf: (result) => result.id,
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "update ups device");
  }
}
