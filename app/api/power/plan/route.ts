import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { readPowerPlanPage } from "@/lib/power/queries/power-plan";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The exact sequence the console would run now, per UPS: targets in order with their requests
 * and deadlines, the total budget against the runtime left when the trigger fires (`summary`:
 * "budget 40 s, runtime at the trigger 5 min 0 s (runtime below 5 min 0 s): OK";
 * `shortfallSeconds` when it does not fit), unprotected targets, and while armed what changed
 * since arming.
 * `armingTargets`: every target an arming puts under control, with the ids to confirm.
 * `wayBack`: by UPS id, the way back after that UPS's shutdown — `plan.hosts` in power-on order
 * with their stored controller (null: it will not come back on its own), `plan.clusters` with
 * the quorum awaited and the flags and HA restored, `plan.guests` in start order with their
 * up-delays as the latest run that listed each node recorded them (`guestsFrom`).
 */
export const GET = route(
  "GET /api/power/plan",
  { role: "viewer", summary: "The exact shutdown sequence the console would run now" },
  async () => json(await readPowerPlanPage(getDb())),
);
