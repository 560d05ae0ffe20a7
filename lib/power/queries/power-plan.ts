import type { Database } from "@/lib/db/client";
import { planPreview, type PlanPreview } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { PowerPlanSnapshot } from "@/lib/power/config/armed-plan-snapshot";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { loadTargets } from "@/lib/power/targets/load-targets";
import { armingTargets } from "./arming-targets";
import { wayBackPreviews, type WayBackPreview } from "./way-back-preview";

/** The plan page section and `GET /api/power/plan`: the preview and what an arming confirms. */
export type PowerPlanView = PlanPreview & { armingTargets: PowerPlanSnapshot["targets"] };

/**
 * One query after the other: `db` may be a transaction (previewPlanChange reads the plan inside
 * one), whose single connection answers one query at a time — pg deprecates handing it a second
 * while the first runs, and pg 9 refuses it.
 */
export async function readPowerPlan(db: Database): Promise<PowerPlanView> {
  const preview = await planPreview(db);
  return { ...preview, armingTargets: await armingTargets(db) };
}

/**
 * The power page's plan and `GET /api/power/plan`: the plan view, and beside each UPS's
 * shutdown the way back after it (./way-back-preview.ts), by UPS id.
 */
export type PowerPlanPage = PowerPlanView & { wayBack: Record<string, WayBackPreview> };

export async function readPowerPlanPage(db: Database): Promise<PowerPlanPage> {
  const plan = await readPowerPlan(db);
  const settings = await readPowerSettings(db);
  const records = await loadTargets(db);
  return {
    ...plan,
    wayBack: await wayBackPreviews(db, plan, records, settings.shutdown.guestParallelism),
  };
}
