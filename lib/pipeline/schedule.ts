import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";

export const TICK_TASK = "run-tick";
export const POWER_TICK_TASK = "power-tick";

/**
 * Each queue's ticks run as their own graphile-worker task, served by their own runner in the
 * worker process: a power shutdown never waits behind onboardings' visits.
 */
export const TICK_TASKS = { default: TICK_TASK, power: POWER_TICK_TASK } as const;
export type TickQueue = keyof typeof TICK_TASKS;

/** The job key that makes graphile-worker keep at most one pending tick per run. */
export function tickJobKey(runId: string): string {
  return `run:${runId}`;
}

type Executor = Pick<Database, "execute">;

/**
 * Schedules the run's next tick inside the caller's transaction, so a state change and its
 * follow-up commit together. `replace` moves a pending tick (e.g. a long poll) to the new time.
 * The task is the one the run was started with (`runs.tick_task`), so every caller — engine,
 * abort, retry, recovery — schedules on the run's own queue without knowing its pipeline.
 */
export async function scheduleTick(tx: Executor, runId: string, runAt: Date): Promise<void> {
  const added = await tx.execute(sql`
    select graphile_worker.add_job(
      r.tick_task,
      json_build_object('runId', r.id::text),
      run_at => ${runAt.toISOString()}::timestamptz,
      max_attempts => 25,
      job_key => ${tickJobKey(runId)},
      job_key_mode => 'replace'
    ) from runs r where r.id = ${runId}::uuid`);
  if (added.rows.length !== 1)
    throw new Error(`cannot schedule a tick of run ${runId}: no such run`);
}
