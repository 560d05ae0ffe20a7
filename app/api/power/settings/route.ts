import { respondToGuardedChange } from "@/lib/api/plan-guarded-response";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZPowerSettingsChange } from "@/lib/power/queries/settings-change";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The global power settings: `{ mode, triggers, pollIntervalMs, shutdown, powerBack, shed }`. */
export const GET = route(
  "GET /api/power/settings",
  { role: "viewer", summary: "The global power settings" },
  async () => {
    const { mode, triggers, pollIntervalMs, shutdown, powerBack, shed } =
      await readPowerSettings(getDb());
    return json({ mode, triggers, pollIntervalMs, shutdown, powerBack, shed });
  },
);

/**
 * Changes the trigger defaults, the poll interval, the shutdown deadlines or when the fleet
 * comes back by itself (`powerBack`: mainsStableMinutes, minChargePercent) or early shedding
 * (`shed`: enabled, afterMinutes, tag, guests [{ node, vmid }]) (admins; what is
 * left out keeps its value). While armed, a change to the plan needs `confirmPlanChange: true`
 * (else 409 with `planChange`, nothing saved). Answers `{ settings, planChange }`.
 */
export const PATCH = route(
  "PATCH /api/power/settings",
  {
    role: "admin",
    summary: "Change the trigger defaults, the poll interval or the shutdown deadlines",
    body: { schema: withPlanChangeConfirmation(ZPowerSettingsChange) },
  },
  async ({ actor, body: { confirmPlanChange, ...change } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => updatePowerSettings(db, change, actor),
      ({ mode, triggers, pollIntervalMs, shutdown, powerBack }) => ({
        settings: { mode, triggers, pollIntervalMs, shutdown, powerBack },
      }),
    ),
);
