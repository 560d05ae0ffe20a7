import type { GuardedChange } from "@/lib/power/queries/plan-change";
import { json } from "./respond";

export const ARMED_PLAN_CHANGE_MESSAGE =
  "This change alters the armed shutdown plan (see planChange). Send it again with confirmPlanChange: true to save it.";

/**
 * The answer to a power configuration change: 409 with the plan change when it would alter the
 * armed plan and was not confirmed (nothing was saved), else the saved result with what it did
 * to the plan.
 */
export function planGuardedResponse<T>(
  outcome: GuardedChange<T>,
  body: (result: T) => Record<string, unknown>,
  status = 200,
): Response {
  if (!outcome.saved) {
    return json(
      { error: ARMED_PLAN_CHANGE_MESSAGE, fieldErrors: {}, planChange: outcome.planChange },
      409,
    );
  }
  return json({ ...body(outcome.result), planChange: outcome.planChange }, status);
}
