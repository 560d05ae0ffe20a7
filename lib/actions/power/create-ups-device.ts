"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { createUpsDevice } from "@/lib/power/ups-devices";
import { ZCreateUpsDevice } from "@/lib/power/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Adds a UPS to watch; its secrets are sealed and never shown again. Admins only; audited. While
 * armed, a change to the plan is saved only once confirmed (`confirmPlanChange`); until then the
 * result shows what it changes.
 */
export async function createUpsDeviceAction(
  _previous: ActionResult<ConfigChangeResult> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      schema: ZCreateUpsDevice,
      change: (db, data, by) => createUpsDevice(db, data, by),
      idOf: (result) => result.id,
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "create ups device");
  }
}
