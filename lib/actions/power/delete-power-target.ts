"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { ZPowerTargetRef } from "@/lib/power/schemas";
import { deletePowerTarget } from "@/lib/power/power-targets";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Stops protecting a target (its host stays, only its power settings go). Admins
 * only; audited. While armed, a change to the plan is saved only once confirmed.
 */
export async function deletePowerTargetAction(
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      schema: ZPowerTargetRef,
      change: (db, data, by) => deletePowerTarget(db, data, by),
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "delete power target");
  }
}
