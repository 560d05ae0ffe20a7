import { requestActor } from "@/lib/auth/actor";
import { searchParamsInput } from "@/lib/http/query-params";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import {
  listPowerEvents,
  POWER_EVENT_FILTER_KEYS,
  ZPowerEventFilter,
} from "@/lib/power/queries/power-events";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One page of the power event log, newest first: `{ events, nextCursor }`. Filters: `severity`
 * (that or worse), `kind` (exact, or a group like `shutdown`), `upsId`, `unacknowledged=true`,
 * `from`, `to`, `limit`; `cursor` for the next page.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const filter = ZPowerEventFilter.parse(
      searchParamsInput(new URL(request.url).searchParams, POWER_EVENT_FILTER_KEYS),
    );
    return json(await listPowerEvents(getDb(), filter));
  } catch (error) {
    return respondError(error, "GET /api/power/events");
  }
}
