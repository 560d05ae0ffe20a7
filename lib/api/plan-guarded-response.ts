import { getDb, type Database } from "@/lib/db/client";
import { changeConfirmingArmedPlan } from "@/lib/power/queries/plan-change";
import { json } from "./respond";

export const ARMED_PLAN_CHANGE_MESSAGE =
  "This change alters the armed shutdown plan (see planChange). Send it again with confirmPlanChange: true to save it.";

/**
 * Makes a power configuration change through the armed-plan guard
 * (lib/power/queries/plan-change.ts) and answers it: 409 with the plan change when it would alter
 * the armed plan and was not confirmed (nothing was saved), else the saved result (`body`) with
 * what it did to the plan.
 */
export async function respondToGuardedChange<T>(
  confirmPlanChange: boolean,
  apply: (db: Database) => Promise<T>,
  body: (result: T) => Record<string, unknown>,
  status = 200,
): Promise<Response> {
  const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, apply);
  if (!outcome.saved) {
    return json(
      { error: ARMED_PLAN_CHANGE_MESSAGE, fieldErrors: {}, planChange: outcome.planChange },
      409,
    );
  }
  return json({ ...body(outcome.result), planChange: outcome.planChange }, status);
}
