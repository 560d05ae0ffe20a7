import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";

export const TICK_TASK = "run-tick";

/** The job key that makes graphile-worker keep at most one pending tick per run. */
export function tickJobKey(runId: string): string {
  return `run:${runId}`;
}

type Executor = Pick<Database, "execute">;

/**
 * Schedules the run's next tick inside the caller's transaction, so a state change and its
 * follow-up commit together. `replace` moves a pending tick (e.g. a long poll) to the new time.
 */
export async function scheduleTick(tx: Executor, runId: string, runAt: Date): Promise<void> {
  await tx.execute(sql`
    select graphile_worker.add_job(
      ${TICK_TASK},
      json_build_object('runId', ${runId}::text),
      run_at => ${runAt.toISOString()}::timestamptz,
      max_attempts => 25,
      job_key => ${tickJobKey(runId)},
      job_key_mode => 'replace'
    )`);
}

export const LIVE_CHANNEL = "clupilot_live";

export type LiveMessage =
  | { type: "run"; runId: string; hostId: string | null }
  | { type: "host"; hostId: string }
  /** New run-log chunks up to `seq` committed (lib/logs); only the log streams relay it. */
  | { type: "log"; runId: string; seq: number };

/** Tells every listening web server that something changed; delivered on commit. */
export async function notifyLive(tx: Executor, message: LiveMessage): Promise<void> {
  await tx.execute(sql`select pg_notify(${LIVE_CHANNEL}, ${JSON.stringify(message)})`);
}
