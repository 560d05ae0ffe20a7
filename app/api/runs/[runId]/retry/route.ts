import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { auditedRunRetry } from "@/lib/api/audited-run-changes";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Re-enters a failed run at its failed step: 200 `{ runId }`; 409 when the run is not failed. */
export const POST = route(
  "POST /api/runs/[runId]/retry",
  { role: "operator", summary: "Retry a failed run at its failed step", params: { runId: ZRunId } },
  async ({ actor, params: { runId } }) => {
    await auditedRunRetry(getDb(), actor, runId);
    return json({ runId });
  },
);
