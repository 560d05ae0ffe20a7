import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
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
    const actor = (await requestActor(request, "operator")).name;
    const runId = parseId(ZRunId, (await params).runId, "runId");
    await retryRun(getDb(), { runId, actor });
    return json({ runId });
  } catch (error) {
    return respondError(error, "POST /api/runs/[runId]/retry");
  }
}
