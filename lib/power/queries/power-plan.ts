import type { Database } from "@/lib/db/client";
import { planPreview, type PlanPreview } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { PowerPlanSnapshot } from "@/lib/power/config/armed-plan-snapshot";
import { armingTargets } from "./arming-targets";

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
