import type { Database } from "@/lib/db/client";
import { getDb } from "@/lib/db/client";
import { changeConfirmingArmedPlan, type PlanChange } from "@/lib/power/queries/plan-change";
import type { ActionInput } from "../action";
import { powerFormInput, type BlankMeans } from "./power-form-input";

/**
 * What a power configuration form hears back: saved (with what it did to the plan), or — while
 * armed — not saved yet because it would change the plan: the form shows `planChange` and
 * submits again with `confirmPlanChange` once the admin agreed.
 */
export type ConfigChangeResult = { saved: boolean; planChange: PlanChange; id: string | null };

/**
 * A power configuration form as the domain's input (lib/actions/power/power-form-input.ts):
 * `blank` says what an empty numeric field means, `extra` adds what the form means by a field
 * it does not send (no feed ticked: none).
 */
export function powerForm(
  options: { blank?: BlankMeans; extra?: (input: Record<string, unknown>) => object } = {},
): (raw: ActionInput) => Record<string, unknown> {
  return (raw) => {
    const input = powerFormInput(raw, options.blank);
    return { ...input, ...options.extra?.(input) };
  };
}

/** A target's form: no feed ticked sends no `feeds` at all — an empty choice, not "keep them". */
export const powerTargetForm = powerForm({ extra: (fields) => ({ feeds: fields.feeds ?? [] }) });

/** Makes the change through the armed-plan guard (lib/power/queries/plan-change.ts). */
export async function runConfigChange<T>(
  confirmPlanChange: boolean,
  change: (db: Database) => Promise<T>,
  idOf?: (result: T) => string,
): Promise<ConfigChangeResult> {
  const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, change);
  return outcome.saved
    ? { saved: true, planChange: outcome.planChange, id: idOf ? idOf(outcome.result) : null }
    : { saved: false, planChange: outcome.planChange, id: null };
}
