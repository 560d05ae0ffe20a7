import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { acknowledgeFailedDeliveries } from "@/lib/notify/deliveries";
import { ZAcknowledgeDeliveries } from "@/lib/notify/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Acknowledges a target's failed deliveries (operators): off the dashboard, no more retries →
 * `{ acknowledged: n }`.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ targetId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const input = parseInput(ZAcknowledgeDeliveries, { targetId: (await params).targetId });
    return json(await acknowledgeFailedDeliveries(getDb(), input, actor));
  } catch (error) {
    return respondError(error, "POST /api/notifications/targets/[targetId]/acknowledge");
  }
}
