import os from "node:os";
import { inArray, notInArray, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { workerHeartbeats } from "@/lib/db/schema";
import { textArray } from "@/lib/db/text-array";
import { scheduleTick } from "./schedule";

/**
 * graphile-worker leaves the jobs of a worker that died without a goodbye (kill -9, power loss)
 * locked for four hours, which would freeze every run it held. Each worker process therefore
 * beats a heartbeat per graphile worker id; any worker process sweeps for workers whose beat
 * stopped and hands their jobs back. Unlocking a live worker's job would at worst start a second
 * tick, which the run's row lock serialises, so the threshold can be short.
 */

export const HEARTBEAT_INTERVAL_MS = 5_000;
export const STALE_AFTER_SECONDS = 30;
/** A job locked by a worker that never beat: it crashed between taking the job and its first beat. */
const UNKNOWN_LOCK_AFTER_SECONDS = 120;

export async function beat(db: Database, workerIds: readonly string[]): Promise<void> {
  if (workerIds.length === 0) return;
  const now = new Date();
  await db
    .insert(workerHeartbeats)
    .values(
      workerIds.map((workerId) => ({
        workerId,
        hostname: os.hostname(),
        pid: process.pid,
        lastSeenAt: now,
      })),
    )
    .onConflictDoUpdate({ target: workerHeartbeats.workerId, set: { lastSeenAt: now } });
}

export async function forgetWorkers(db: Database, workerIds: readonly string[]): Promise<void> {
  if (workerIds.length === 0) return;
  await db.delete(workerHeartbeats).where(inArray(workerHeartbeats.workerId, [...workerIds]));
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else — alive as far as we can tell.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * How old a heartbeat must be, in a sweep at `now`, to count as a dead worker's. Right after a
 * database outage every worker's last beat is as old as the outage (none could beat meanwhile),
 * so age proves nothing until the living have had STALE_AFTER_SECONDS to beat again; until then
 * only a process on this machine that is gone counts as dead.
 */
export function staleAfterSecondsAt(now: number, databaseBackSince: number | null): number {
  const justBack =
    databaseBackSince !== null && now - databaseBackSince < STALE_AFTER_SECONDS * 1000;
  return justBack ? Number.POSITIVE_INFINITY : STALE_AFTER_SECONDS;
}

export type RecoveryReport = { unlockedWorkers: string[]; rescheduledRuns: string[] };

/**
 * Finds dead workers and releases their jobs; then gives every running run that lost its tick
 * job (e.g. the job exhausted its attempts while the database was down) a new one.
 */
export async function recoverDeadWorkers(
  db: Database,
  ownWorkerIds: readonly string[],
  options: { staleAfterSeconds?: number; isAlive?: (pid: number) => boolean } = {},
): Promise<RecoveryReport> {
  const staleAfter = options.staleAfterSeconds ?? STALE_AFTER_SECONDS;
  const isAlive = options.isAlive ?? processIsAlive;
  const hostname = os.hostname();
  const others = await db
    .select()
    .from(workerHeartbeats)
    .where(
      ownWorkerIds.length ? notInArray(workerHeartbeats.workerId, [...ownWorkerIds]) : undefined,
    );
  const staleBefore = Date.now() - staleAfter * 1000;
  const dead = others
    .filter(
      (w) =>
        w.lastSeenAt.getTime() < staleBefore ||
        // Same machine and the process is gone: no need to wait for the beat to go stale.
        (w.hostname === hostname && w.pid !== process.pid && !isAlive(w.pid)),
    )
    .map((w) => w.workerId);

  const unknownLockers = await db.execute<{ locked_by: string }>(sql`
    select distinct j.locked_by from graphile_worker._private_jobs j
    where j.locked_by is not null
      and j.locked_at < now() - make_interval(secs => ${UNKNOWN_LOCK_AFTER_SECONDS})
      and not exists (select 1 from ${workerHeartbeats} h where h.worker_id = j.locked_by)`);
  const unlock = [...new Set([...dead, ...unknownLockers.rows.map((r) => r.locked_by)])].filter(
    (id) => !ownWorkerIds.includes(id),
  );
  if (unlock.length > 0) {
    await db.execute(sql`select graphile_worker.force_unlock_workers(${textArray(unlock)})`);
    await forgetWorkers(db, unlock);
  }
  return { unlockedWorkers: unlock, rescheduledRuns: await rescheduleOrphanRuns(db) };
}

async function rescheduleOrphanRuns(db: Database): Promise<string[]> {
  const orphans = await db.execute<{ id: string }>(sql`
    select r.id from runs r
    where r.status = 'running'
      and not exists (
        select 1 from graphile_worker._private_jobs j
        where j.key = 'run:' || r.id::text and j.attempts < j.max_attempts)`);
  for (const { id } of orphans.rows) {
    await db.transaction(async (tx) => {
      await tx.execute(sql`select graphile_worker.remove_job(${`run:${id}`})`);
      await scheduleTick(tx, id, new Date());
    });
  }
  return orphans.rows.map((r) => r.id);
}

export type StrandedJobsReport = { completed: string[]; released: string[] };

/**
 * Jobs locked in the name of this live process that none of its workers is running: their
 * finish (graphile-worker's completeJob / failJob) was lost because the database was away at
 * that moment, or a job was locked by a fetch whose answer never arrived. Nobody else releases
 * them — this process beats its heartbeat — so it does it itself, the way graphile-worker would
 * have: a job that succeeded is deleted, any other is handed back with the usual retry delay.
 * `jobs.busy` are the ones its workers still hold (see worker/job-ledger.ts); a lock younger
 * than `settleSeconds` is left alone, as its job may not have reached a worker yet.
 */
export async function releaseStrandedJobs(
  db: Database,
  ownWorkerIds: readonly string[],
  jobs: { busy: ReadonlySet<string>; succeeded: ReadonlySet<string> },
  settleSeconds: number,
): Promise<StrandedJobsReport> {
  if (ownWorkerIds.length === 0) return { completed: [], released: [] };
  const own = textArray(ownWorkerIds);
  const locked = await db.execute<{ id: string }>(sql`
    select id::text as id from graphile_worker._private_jobs
    where locked_by = any(${own}) and locked_at < now() - make_interval(secs => ${settleSeconds})`);
  const stranded = locked.rows.map((row) => row.id).filter((id) => !jobs.busy.has(id));
  const completed = stranded.filter((id) => jobs.succeeded.has(id));
  const released = stranded.filter((id) => !jobs.succeeded.has(id));
  if (completed.length > 0) {
    await db.execute(sql`
      with j as (
        delete from graphile_worker._private_jobs
        where id = any(${textArray(completed)}::bigint[]) and locked_by = any(${own})
        returning job_queue_id, locked_by)
      update graphile_worker._private_job_queues q set locked_by = null, locked_at = null
      from j where q.id = j.job_queue_id and q.locked_by = j.locked_by`);
  }
  if (released.length > 0) {
    await db.execute(sql`
      with j as (
        update graphile_worker._private_jobs
        set locked_by = null, locked_at = null,
          last_error = 'its worker lost the database before it could record how the job ended',
          run_at = greatest(now(), run_at) + exp(least(attempts, 10)) * interval '1 second'
        where id = any(${textArray(released)}::bigint[]) and locked_by = any(${own})
        returning job_queue_id)
      update graphile_worker._private_job_queues q set locked_by = null, locked_at = null
      from j where q.id = j.job_queue_id and q.locked_by = any(${own})`);
  }
  return { completed, released };
}
