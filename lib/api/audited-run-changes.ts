import type { Actor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { abortRun } from "@/lib/runs/abort-run";
import { retryRun } from "@/lib/runs/retry-run";

/*
 * A run's abort and retry as both doors (server action, JSON API) make them: audited under the
 * actor's name, so the audit log reads the same whichever one was used.
 */

export function auditedRunAbort(db: Database, actor: Actor, runId: string): Promise<void> {
  return audited(db, { actor, action: "run.abort", target: `run:${runId}` }, () =>
    abortRun(db, { runId, actor: actor.name }),
  );
}

export function auditedRunRetry(db: Database, actor: Actor, runId: string): Promise<void> {
  return audited(db, { actor, action: "run.retry", target: `run:${runId}` }, () =>
    retryRun(db, { runId, actor: actor.name }),
  );
}
