import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listPowerRuns, ZPowerRunsQuery } from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every power run, drills and real outages, newest first: `{ runs, nextBefore }`. Each run says
 * what started it (`origin`: a drill by whom, live or not, or the UPS trigger) and how its
 * actions ended. `?before=<nextBefore>&limit=` pages.
 */
export const GET = route(
  "GET /api/power/runs",
  {
    role: "viewer",
    summary: "Every power run, drills and real outages, newest first",
    query: { schema: ZPowerRunsQuery },
  },
  async ({ query }) => json(await listPowerRuns(getDb(), query)),
);
