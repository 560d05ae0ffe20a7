"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { ZUpsDeviceRef } from "@/lib/power/schemas";
import { deleteUpsDevice } from "@/lib/power/ups-devices";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Removes a UPS, its readings and its state; refused while it still feeds a target. Admins
 * only; audited. While armed, a change to the plan is saved only once confirmed.
 */
export async function deleteUpsDeviceAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      schema: ZUpsDeviceRef,
      change: (db, data, by) => deleteUpsDevice(db, data, by),
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "delete ups device");
  }
}
