import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { targetCards } from "@/lib/notify/deliveries";
import { ZCreateNotificationTarget } from "@/lib/notify/schemas";
import { createTarget } from "@/lib/notify/targets";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every notification target as its card: `{ cards: [{ target: { id, name, format, urlOrigin,
 * minSeverity, eventKinds, authHeaderName, hasAuthHeader, enabled, … }, lastDelivery,
 * failing: [delivery] }] }`. Never the URL's path or the auth header's value.
 */
export const GET = route(
  "GET /api/notifications/targets",
  { role: "viewer", summary: "Every notification target with its deliveries" },
  async () => json({ cards: await targetCards(getDb()) }),
);

/**
 * Adds a target (admins): `{ name, format: slack|discord|ntfy|teams|json|text|template, url,
 * template?, templateEscape?, templateContentType?, minSeverity?, eventKinds?, authHeaderName?,
 * authHeaderValue?, enabled? }` → 201 `{ target }`. URL and header value are sealed.
 */
export const POST = route(
  "POST /api/notifications/targets",
  {
    role: "admin",
    summary: "Add a notification target",
    body: { schema: ZCreateNotificationTarget },
  },
  async ({ actor, body }) => json({ target: await createTarget(getDb(), body, actor) }, 201),
);
