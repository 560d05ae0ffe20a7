import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
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
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ cards: await targetCards(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/notifications/targets");
  }
}

/**
 * Adds a target (admins): `{ name, format: slack|discord|ntfy|teams|json|text|template, url,
 * template?, templateEscape?, templateContentType?, minSeverity?, eventKinds?, authHeaderName?,
 * authHeaderValue?, enabled? }` → 201 `{ target }`. URL and header value are sealed.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = parseInput(ZCreateNotificationTarget, await readJsonObject(request));
    return json({ target: await createTarget(getDb(), input, actor) }, 201);
  } catch (error) {
    return respondError(error, "POST /api/notifications/targets");
  }
}
