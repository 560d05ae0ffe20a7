import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { failingDeliveriesSummary } from "@/lib/notify/deliveries";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Deliveries failing now, per enabled target, for the dashboard: `{ failing: [{ targetId,
 * targetName, failing, lastError, lastAttemptAt }] }`; empty when every notification arrived.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ failing: await failingDeliveriesSummary(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/notifications/failing");
  }
}
