import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { planPreview } from "@/lib/power/plan-preview";
import { armingTargets } from "@/lib/power/queries/arming-targets";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The exact sequence the console would run now, per UPS: targets in order with their requests
 * and deadlines, the total budget against the runtime reserve (`summary`: "budget 40 s,
 * reserve 11 min 0 s: OK"), unprotected targets, and while armed what changed since arming.
 * `armingTargets`: every target an arming puts under control, with the ids to confirm.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const db = getDb();
    const [preview, targets] = await Promise.all([planPreview(db), armingTargets(db)]);
    return json({ ...preview, armingTargets: targets });
  } catch (error) {
    return respondError(error, "GET /api/power/plan");
  }
}
