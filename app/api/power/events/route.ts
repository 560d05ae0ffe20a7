import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listPowerEvents, ZPowerEventFilter } from "@/lib/power/queries/power-events";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One page of the power event log, newest first: `{ events, nextCursor }`. Filters: `severity`
 * (that or worse), `kind` (exact, or a group like `shutdown`), `upsId`, `unacknowledged=true`,
 * `from`, `to`, `limit`; `cursor` for the next page.
 */
export const GET = route(
  "GET /api/power/events",
  {
    role: "viewer",
    summary: "One page of the power event log, newest first",
    query: { schema: ZPowerEventFilter },
    errorKeys: "field",
  },
  async ({ query }) => json(await listPowerEvents(getDb(), query)),
);
