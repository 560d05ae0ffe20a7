"use server";

import { revalidatePath } from "next/cache";
import { currentActor } from "@/lib/auth/actor";
import { createPowerTarget } from "@/lib/power/power-targets";
import { ZCreatePowerTarget } from "@/lib/power/schemas";
import { actionFailure, type ActionResult } from "../action-result";
import { runConfigChange, type ConfigChangeResult } from "./config-change";

/**
 * Protects an onboarded host or a backup server: feeds, policy, stage, whether it runs the
 * console. Admins only; audited. While armed, a change to the plan is saved only once confirmed
 * (`confirmPlanChange`); until then the result shows what it changes.
 */
export async function createPowerTargetAction(
  _previous: ActionResult<ConfigChangeResult> | null,
  input: FormData | Record<string, unknown>,
): Promise<ActionResult<ConfigChangeResult>> {
  try {
    const actor = await currentActor("admin");
    const result = await runConfigChange(actor, input, {
      // No feed ticked sends no `feeds` at all: that is an empty choice, not "keep them".
      extra: (fields) => ({ feeds: fields.feeds ?? [] }),
      schema: ZCreatePowerTarget,
      change: (db, data, by) => createPowerTarget(db, data, by),
      idOf: (result) => result.id,
    });
    revalidatePath("/power", "layout");
    return { ok: true, ...result };
  } catch (error) {
    return actionFailure(error, "create power target");
  }
}
