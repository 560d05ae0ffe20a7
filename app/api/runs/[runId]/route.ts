import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { ZRunId } from "@/lib/hosts/schemas";
import { getRun } from "@/lib/runs/get-run";
import { pipelines } from "@/lib/registry/pipelines";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** One run: timeline, events and log tail. */
export const GET = route(
  "GET /api/runs/[runId]",
  { role: "viewer", summary: "One run: timeline, events and log tail", params: { runId: ZRunId } },
  async ({ params: { runId } }) => {
    const run = await getRun(getDb(), runId, pipelines);
    if (!run) throw new AppError("not_found", `Run ${runId} does not exist.`);
    return json(run);
  },
);
