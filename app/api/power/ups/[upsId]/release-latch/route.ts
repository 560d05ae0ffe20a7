import { z } from "zod";
import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { releaseLatch } from "@/lib/power/release-latch";
import { ZReleaseLatch } from "@/lib/power/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Releases the UPS's latched trigger by hand (admins; audited): 200 `{ upsId, duringOutage }`;
 * 409 when nothing is latched, 404 for an unknown UPS. The body is empty or
 * `{ confirmDuringOutage }`: while the UPS is (last seen) on battery a release lets its trigger
 * fire again within seconds and shut its targets down again, so it then needs
 * `confirmDuringOutage: true` (without it: 409 naming the UPS's state, nothing released).
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ upsId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const upsId = parseId(z.uuid({ error: "Not a UPS id." }), (await params).upsId, "upsId");
    const body = (await request.clone().text()).trim() === "" ? {} : await readJsonObject(request);
    const input = parseInput(ZReleaseLatch, { ...body, upsId });
    return json(await releaseLatch(getDb(), input, actor));
  } catch (error) {
    return respondError(error, "POST /api/power/ups/[upsId]/release-latch");
  }
}
