import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { ZRunId } from "@/lib/hosts/schemas";
import { getRun } from "@/lib/runs/get-run";
import { pipelines } from "@/lib/registry/pipelines";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** One run: timeline, events and log tail. */
export async function GET(
  request: Request,
  { params }: { params: Promise<{ runId: string }> },
): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const runId = parseId(ZRunId, (await params).runId, "runId");
    const run = await getRun(getDb(), runId, pipelines);
    if (!run) throw new AppError("not_found", `Run ${runId} does not exist.`);
    return json(run);
  } catch (error) {
    return respondError(error, "GET /api/runs/[runId]");
  }
}
