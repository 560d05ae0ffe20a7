"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { updatePowerTarget } from "@/lib/power/power-targets";
import { ZUpdatePowerTarget } from "@/lib/power/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Changes a target's protection (a backup server's token secret left empty stays). Admins only;
 * audited. While armed, a change to the plan is saved only once confirmed (`confirmPlanChange`);
 * until then the result shows what it changes.
 */
export async function updatePowerTargetAction(
  _previous: ActionResult<ConfigChangeResult> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      // No feed ticked sends no `feeds` at all: that is an empty choice, not "keep them".
      extra: (fields) => ({ feeds: fields.feeds ?? [] }),
      schema: ZUpdatePowerTarget,
      change: (db, data, by) => updatePowerTarget(db, data, by),
      idOf: (result) => result.id,
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "update power target");
  }
}
