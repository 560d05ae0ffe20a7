import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { failingDeliveriesSummary } from "@/lib/notify/deliveries";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Deliveries failing now, per enabled target, for the dashboard: `{ failing: [{ targetId,
 * targetName, failing, lastError, lastAttemptAt }] }`; empty when every notification arrived.
 */
export const GET = route(
  "GET /api/notifications/failing",
  { role: "viewer", summary: "Notification deliveries failing now, per target" },
  async () => json({ failing: await failingDeliveriesSummary(getDb()) }),
);
