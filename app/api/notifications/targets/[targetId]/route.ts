import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef, ZUpdateNotificationTarget } from "@/lib/notify/schemas";
import { deleteTarget, updateTarget } from "@/lib/notify/targets";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Changes a target (admins): any field of POST; `url` and `authHeaderValue` left out keep the
 * stored ones, `removeAuthHeader: true` drops the header → `{ target }`.
 */
export const PATCH = route(
  "PATCH /api/notifications/targets/[targetId]",
  {
    role: "admin",
    summary: "Change a notification target",
    body: { schema: ZUpdateNotificationTarget, fromPath: { targetId: "id" } },
  },
  async ({ actor, body }) => json({ target: await updateTarget(getDb(), body, actor) }),
);

/** Removes a target with its deliveries (admins) → 204. */
export const DELETE = route(
  "DELETE /api/notifications/targets/[targetId]",
  {
    role: "admin",
    summary: "Remove a notification target with its deliveries",
    body: { schema: ZNotificationTargetRef, read: "none", fromPath: { targetId: "id" } },
  },
  async ({ actor, body }) => {
    await deleteTarget(getDb(), body, actor);
    return new Response(null, { status: 204 });
  },
);
