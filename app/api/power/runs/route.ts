import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { searchParamsInput } from "@/lib/http/query-params";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import {
  listPowerRuns,
  POWER_RUNS_QUERY_KEYS,
  ZPowerRunsQuery,
} from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every power run, drills and real outages, newest first: `{ runs, nextBefore }`. Each run says
 * what started it (`origin`: a drill by whom, live or not, or the UPS trigger) and how its
 * actions ended. `?before=<nextBefore>&limit=` pages.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const query = parseInput(
      ZPowerRunsQuery,
      searchParamsInput(new URL(request.url).searchParams, POWER_RUNS_QUERY_KEYS),
    );
    return json(await listPowerRuns(getDb(), query));
  } catch (error) {
    return respondError(error, "GET /api/power/runs");
  }
}
