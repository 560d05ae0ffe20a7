import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { abortRun } from "@/lib/runs/abort-run";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Requests the abort of a running run: 202 `{ runId }` (the step cleans up, then the run ends
 * as failed); 409 when the run is not running.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ runId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const runId = parseId(ZRunId, (await params).runId, "runId");
    const db = getDb();
    await audited(db, { actor, action: "run.abort", target: `run:${runId}` }, () =>
      abortRun(db, { runId, actor: actor.name }),
    );
    return json({ runId }, 202);
  } catch (error) {
    return respondError(error, "POST /api/runs/[runId]/abort");
  }
}
