import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listUpsReadings, ZUpsReadingsQuery } from "@/lib/power/queries/ups-readings";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One UPS's readings for the chart, oldest first: `?upsId=…&from=…&to=…` (ISO times; the last
 * 6 hours by default, at most 7 days) → `{ upsId, from, to, bucketSeconds, points }`.
 */
export const GET = route(
  "GET /api/power/readings",
  {
    role: "viewer",
    summary: "One UPS's readings over a time range, oldest first",
    query: { schema: ZUpsReadingsQuery },
    errorKeys: "field",
  },
  async ({ query }) => json(await listUpsReadings(getDb(), query)),
);
