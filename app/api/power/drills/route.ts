import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
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
export const GET = route(
  "GET /api/power/drills",
  {
    role: "viewer",
    summary: "What a drill of one UPS's outage would run",
    query: { schema: ZDrillTargetsQuery },
  },
  async ({ query: { upsId } }) => json(await drillPlan(getDb(), upsId)),
);

/**
 * Starts a drill (admins; audited): `{ upsId, live: false }` rehearses in dry-run — nothing is
 * sent, whatever the mode; `{ upsId, live: true, confirmedTargetIds }` really shuts those targets
 * down and needs the console armed (409 otherwise, or when the targets changed). Another
 * shutdown run in progress: 409. Answers `{ runId, live, ups, targets }`; follow it at
 * `GET /api/power/runs/:runId`.
 */
export const POST = route(
  "POST /api/power/drills",
  {
    role: "admin",
    summary: "Start a drill of one UPS's outage, dry-run or live",
    body: { schema: ZStartDrill, read: "json" },
  },
  async ({ actor, body }) => json(await startDrill(getDb(), body, actor), 201),
);
