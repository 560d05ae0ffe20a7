import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZNotificationTargetRef, ZUpdateNotificationTarget } from "@/lib/notify/schemas";
import { deleteTarget, updateTarget } from "@/lib/notify/targets";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Params = { params: Promise<{ targetId: string }> };

/**
 * Changes a target (admins): any field of POST; `url` and `authHeaderValue` left out keep the
 * stored ones, `removeAuthHeader: true` drops the header → `{ target }`.
 */
export async function PATCH(request: Request, { params }: Params): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const body = await readJsonObject(request);
    const input = parseInput(ZUpdateNotificationTarget, { ...body, id: (await params).targetId });
    return json({ target: await updateTarget(getDb(), input, actor) });
  } catch (error) {
    return respondError(error, "PATCH /api/notifications/targets/[targetId]");
  }
}

/** Removes a target with its deliveries (admins) → 204. */
export async function DELETE(request: Request, { params }: Params): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = parseInput(ZNotificationTargetRef, { id: (await params).targetId });
    await deleteTarget(getDb(), input, actor);
    return new Response(null, { status: 204 });
  } catch (error) {
    return respondError(error, "DELETE /api/notifications/targets/[targetId]");
  }
}
