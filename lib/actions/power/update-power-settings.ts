"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { updatePowerSettings } from "@/lib/power/update-power-settings";
import { ZPowerSettingsChange } from "@/lib/power/queries/settings-change";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Changes the global trigger defaults, the poll interval or the shutdown deadlines. Admins only;
 * audited. While armed, a change to the plan is saved only once confirmed (`confirmPlanChange`);
 * until then the result shows what it changes.
 */
export async function updatePowerSettingsAction(
  _previous: ActionResult<ConfigChangeResult> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      schema: ZPowerSettingsChange,
      blank: "null",
      extra: consoleGuestOfForm,
      change: (db, data, by) => updatePowerSettings(db, data, by),
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "update power settings");
  }
}

/**
 * The form's two console-guest fields: both empty is "the console runs in no guest" (null);
 * one of them empty is left for the schema to refuse under that field.
 */
function consoleGuestOfForm(input: Record<string, unknown>): Record<string, unknown> {
  const shutdown = input.shutdown as Record<string, unknown> | undefined;
  const guest = shutdown?.consoleGuest as { node?: unknown; vmid?: unknown } | undefined;
  if (!guest || guest.node !== null || guest.vmid !== null) return {};
  return { shutdown: { ...shutdown, consoleGuest: null } };
}
