import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef } from "@/lib/notify/schemas";
import { testTarget } from "@/lib/notify/test-target";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Sends the target a real test message now (admins): `{ outcome: { ok: true, status } |
 * { ok: false, status, error } }` — what the target's service answered.
 */
export const POST = route(
  "POST /api/notifications/targets/[targetId]/test",
  {
    role: "admin",
    summary: "Send a notification target a real test message now",
    body: { schema: ZNotificationTargetRef, read: "none", fromPath: { targetId: "id" } },
  },
  async ({ actor, body }) => json({ outcome: await testTarget(getDb(), body, actor) }),
);
