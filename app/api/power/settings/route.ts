import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { planGuardedResponse } from "@/lib/api/plan-guarded-response";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import {
  changeConfirmingArmedPlan,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { readPowerSettings } from "@/lib/power/power-settings-store";
import { ZPowerSettingsChange } from "@/lib/power/queries/settings-change";
import { updatePowerSettings } from "@/lib/power/update-power-settings";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The global power settings: `{ mode, triggers, pollIntervalMs, shutdown }`. */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const { mode, triggers, pollIntervalMs, shutdown } = await readPowerSettings(getDb());
    return json({ mode, triggers, pollIntervalMs, shutdown });
  } catch (error) {
    return respondError(error, "GET /api/power/settings");
  }
}

/**
 * Changes the trigger defaults, the poll interval or the shutdown deadlines (admins; what is
 * left out keeps its value). While armed, a change to the plan needs `confirmPlanChange: true`
 * (else 409 with `planChange`, nothing saved). Answers `{ settings, planChange }`.
 */
export async function PATCH(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const body = await readJsonObject(request);
    const input = parseInput(ZPowerSettingsChange, body);
    const { confirmPlanChange } = ZPlanChangeConfirmation.parse(body);
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, (db) =>
      updatePowerSettings(db, input, actor),
    );
    return planGuardedResponse(outcome, ({ mode, triggers, pollIntervalMs, shutdown }) => ({
      settings: { mode, triggers, pollIntervalMs, shutdown },
    }));
  } catch (error) {
    return respondError(error, "PATCH /api/power/settings");
  }
}
