import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { drillWayBack, startDrillWayBack } from "@/lib/power/drill/drill-way-back";
import { ZDrillRunParams, ZDrillWayBackBody } from "@/lib/power/drill/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * What the way back of this drill would do now: `{ drill, consoleMode, live, refused, plan }` —
 * `plan.hosts` in power-on order with their stored controller (a live way back confirms their
 * `targetId`s), `plan.clusters` to restore, `plan.guests` in start order; `live.offered` false
 * with why (a dry-run drill, a console not armed); `refused` why none can start now.
 */
export const GET = route(
  "GET /api/power/drills/[runId]/way-back",
  {
    role: "viewer",
    summary: "What a drill's way back would do now",
    params: ZDrillRunParams,
  },
  async ({ params: { runId } }) => json(await drillWayBack(getDb(), runId)),
);

/**
 * Starts a drill's way back (admins; audited) once its shutdown run has ended: `{ live: false }`
 * records every power-on and start as would-do and sends nothing; `{ live: true,
 * confirmedTargetIds }` (a live drill, the console armed) powers on exactly those hosts and
 * starts the guests the drill stopped. 201 `{ runId, live, hosts }`; 409 when refused (a
 * confirmation that no longer matches names `confirmedTargetIds`).
 */
export const POST = route(
  "POST /api/power/drills/[runId]/way-back",
  {
    role: "admin",
    summary: "Start a drill's way back, dry-run or live",
    params: ZDrillRunParams,
    body: { schema: ZDrillWayBackBody, read: "json" },
  },
  async ({ actor, params: { runId }, body }) =>
    json(await startDrillWayBack(getDb(), { ...body, runId }, actor), 201),
);
