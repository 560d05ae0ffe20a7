import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { auditedRunAbort } from "@/lib/api/audited-run-changes";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Requests the abort of a running run: 202 `{ runId }` (the step cleans up, then the run ends
 * as failed); 409 when the run is not running.
 */
export const POST = route(
  "POST /api/runs/[runId]/abort",
  { role: "operator", summary: "Abort a running run", params: { runId: ZRunId } },
  async ({ actor, params: { runId } }) => {
    await auditedRunAbort(getDb(), actor, runId);
    return json({ runId }, 202);
  },
);
