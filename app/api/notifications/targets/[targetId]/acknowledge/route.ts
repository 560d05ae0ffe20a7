import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { acknowledgeFailedDeliveries } from "@/lib/notify/deliveries";
import { ZAcknowledgeDeliveries } from "@/lib/notify/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Acknowledges a target's failed deliveries (operators): off the dashboard, no more retries →
 * `{ acknowledged: n }`.
 */
export const POST = route(
  "POST /api/notifications/targets/[targetId]/acknowledge",
  {
    role: "operator",
    summary: "Acknowledge a target's failed deliveries",
    body: { schema: ZAcknowledgeDeliveries, read: "none", fromPath: { targetId: "targetId" } },
  },
  async ({ actor, body }) => json(await acknowledgeFailedDeliveries(getDb(), body, actor)),
);
