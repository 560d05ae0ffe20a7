import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef } from "@/lib/notify/schemas";
import { testTarget } from "@/lib/notify/test-target";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Sends the target a real test message now (admins): `{ outcome: { ok: true, status } |
 * { ok: false, status, error } }` — what the target's service answered.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ targetId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = parseInput(ZNotificationTargetRef, { id: (await params).targetId });
    return json({ outcome: await testTarget(getDb(), input, actor) });
  } catch (error) {
    return respondError(error, "POST /api/notifications/targets/[targetId]/test");
  }
}
