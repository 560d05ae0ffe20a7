import { z } from "zod";
import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { releaseLatch } from "@/lib/power/release-latch";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Releases the UPS's latched trigger by hand (admins; audited): 200 `{ upsId }`; 409 when
 * nothing is latched, 404 for an unknown UPS.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ upsId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const upsId = parseId(z.uuid({ error: "Not a UPS id." }), (await params).upsId, "upsId");
    await releaseLatch(getDb(), { upsId }, actor);
    return json({ upsId });
  } catch (error) {
    return respondError(error, "POST /api/power/ups/[upsId]/release-latch");
  }
}
