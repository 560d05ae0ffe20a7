import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { searchParamsInput } from "@/lib/http/query-params";
import { json, readJson, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { drillPlan } from "@/lib/power/drill/drill-plan";
import { ZDrillTargetsQuery, ZStartDrill } from "@/lib/power/drill/schemas";
import { startDrill } from "@/lib/power/drill/start-drill";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * What a drill of `?upsId=…`'s outage would run: `{ ups, consoleMode, targets, budgetSeconds }`,
 * targets in sequence order with their exact requests (a live drill confirms their ids).
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const { upsId } = parseInput(
      ZDrillTargetsQuery,
      searchParamsInput(new URL(request.url).searchParams, ["upsId"]),
    );
    return json(await drillPlan(getDb(), upsId));
  } catch (error) {
    return respondError(error, "GET /api/power/drills");
  }
}

/**
 * Starts a drill (admins; audited): `{ upsId, live: false }` rehearses in dry-run — nothing is
 * sent, whatever the mode; `{ upsId, live: true, confirmedTargetIds }` really shuts those targets
 * down and needs the console armed (409 otherwise, or when the targets changed). Another
 * shutdown run in progress: 409. Answers `{ runId, live, ups, targets }`; follow it at
 * `GET /api/power/runs/:runId`.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = parseInput(ZStartDrill, await readJson(request));
    return json(await startDrill(getDb(), input, actor), 201);
  } catch (error) {
    return respondError(error, "POST /api/power/drills");
  }
}
