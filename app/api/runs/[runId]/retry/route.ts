import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { retryRun } from "@/lib/runs/retry-run";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Re-enters a failed run at its failed step: 200 `{ runId }`; 409 when the run is not failed. */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ runId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const runId = parseId(ZRunId, (await params).runId, "runId");
    const db = getDb();
    await audited(db, { actor, action: "run.retry", target: `run:${runId}` }, () =>
      retryRun(db, { runId, actor: actor.name }),
    );
    return json({ runId });
  } catch (error) {
    return respondError(error, "POST /api/runs/[runId]/retry");
  }
}
