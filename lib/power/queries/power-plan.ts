import type { Database } from "@/lib/db/client";
import { planPreview, type PlanPreview } from "@/lib/power/plan-preview";
import type { PowerPlanSnapshot } from "@/lib/power/plan-snapshot";
import { armingTargets } from "./arming-targets";

/** The plan page section and `GET /api/power/plan`: the preview and what an arming confirms. */
export type PowerPlanView = PlanPreview & { armingTargets: PowerPlanSnapshot["targets"] };

export async function readPowerPlan(db: Database): Promise<PowerPlanView> {
  const [preview, targets] = await Promise.all([planPreview(db), armingTargets(db)]);
  return { ...preview, armingTargets: targets };
}
