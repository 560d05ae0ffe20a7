import { z } from "zod";
import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { runTimeline } from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Context = { params: Promise<{ runId: string }> };
const ZRunId = z.uuid({ error: "Not a run id." });

/**
 * One power run's timeline: `{ run, lanes, actions, serverTime }` — a lane per node (and
 * "cluster"), every action with its start, end (null while in flight), outcome and masked
 * request. The run's log and steps are at `/api/runs/:runId`.
 */
export async function GET(request: Request, { params }: Context): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const runId = parseId(ZRunId, (await params).runId, "runId");
    const timeline = await runTimeline(getDb(), runId);
    if (!timeline) {
      throw new AppError(
        "not_found",
        "No power run has this id; the list of power runs is at /power/runs.",
      );
    }
    return json(timeline);
  } catch (error) {
    return respondError(error, "GET /api/power/runs/[runId]");
  }
}
