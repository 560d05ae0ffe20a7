import { z } from "zod";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { runTimeline } from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const ZRunId = z.uuid({ error: "Not a run id." });

/**
 * One power run's timeline: `{ run, lanes, actions, serverTime }` — a lane per node (and
 * "cluster"), every action with its start, end (null while in flight), outcome and masked
 * request. The run's log and steps are at `/api/runs/:runId`.
 */
export const GET = route(
  "GET /api/power/runs/[runId]",
  { role: "viewer", summary: "One power run's timeline", params: { runId: ZRunId } },
  async ({ params: { runId } }) => {
    const timeline = await runTimeline(getDb(), runId);
    if (!timeline) {
      throw new AppError(
        "not_found",
        "No power run has this id; the list of power runs is at /power/runs.",
      );
    }
    return json(timeline);
  },
);
