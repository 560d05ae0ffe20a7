import { requestActor } from "@/lib/auth/actor";
import { searchParamsInput } from "@/lib/http/query-params";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listUpsReadings, ZUpsReadingsQuery } from "@/lib/power/queries/ups-readings";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One UPS's readings for the chart, oldest first: `?upsId=…&from=…&to=…` (ISO times; the last
 * 6 hours by default, at most 7 days) → `{ upsId, from, to, bucketSeconds, points }`.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const query = ZUpsReadingsQuery.parse(
      searchParamsInput(new URL(request.url).searchParams, ["upsId", "from", "to"]),
    );
    return json(await listUpsReadings(getDb(), query));
  } catch (error) {
    return respondError(error, "GET /api/power/readings");
  }
}
