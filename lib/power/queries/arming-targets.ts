import type { Database } from "@/lib/db/client";
import type { PowerPlanSnapshot } from "@/lib/power/config/armed-plan-snapshot";
import { planSnapshot } from "@/lib/power/shutdown-pipeline/plan-preview";
import { loadTargets } from "@/lib/power/targets/load-targets";

/**
 * Every target arming would put under the console's control, in sequence order with its exact
 * request: what the arming confirmation lists, and the ids it sends back (setPowerMode refuses
 * an arming whose list no longer matches).
 */
export async function armingTargets(db: Database): Promise<PowerPlanSnapshot["targets"]> {
  return planSnapshot(await loadTargets(db)).targets;
}
