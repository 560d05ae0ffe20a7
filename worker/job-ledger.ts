import type { WorkerEvents } from "graphile-worker";

/**
 * What this process's graphile workers did with the jobs they took, as far as this process can
 * tell. graphile-worker 0.17.3 records a finished job (completeJob / failJob) without awaiting
 * it: when the database is away at that moment, the write is lost and the job stays locked in
 * the name of this live process — for four hours, as far as graphile-worker is concerned, and the
 * run it ticks stands still. The sweep (lib/pipeline/recovery.ts releaseStrandedJobs) finds such
 * jobs; the ledger tells it which locks are still this process's business and how each job ended.
 */
export type JobLedger = {
  /** Jobs being run now, or finished so recently that their release may still be under way. */
  busy(): Set<string>;
  /** Jobs that finished successfully (longer ago than the settle time). */
  succeeded(): Set<string>;
};

/** How long a finished job's release may take before a lock still held counts as lost. */
export const SETTLE_MS = 5_000;
/** Finished jobs are remembered this long; one forgotten is released like a failed one. */
const REMEMBER_MS = 10 * 60_000;

export function createJobLedger(
  events: WorkerEvents,
  options: { settleMs?: number; now?: () => number } = {},
): JobLedger {
  const settleMs = options.settleMs ?? SETTLE_MS;
  const now = options.now ?? Date.now;
  const running = new Set<string>();
  const finished = new Map<string, { at: number; succeeded: boolean }>();

  events.on("job:start", ({ job }) => {
    running.add(job.id);
  });
  events.on("job:complete", ({ job, error }) => {
    running.delete(job.id);
    finished.set(job.id, { at: now(), succeeded: !error });
  });

  const forgetOld = () => {
    const before = now() - REMEMBER_MS;
    for (const [id, entry] of finished) if (entry.at < before) finished.delete(id);
  };

  return {
    busy() {
      forgetOld();
      const settling = now() - settleMs;
      const ids = new Set(running);
      for (const [id, entry] of finished) if (entry.at >= settling) ids.add(id);
      return ids;
    },
    succeeded() {
      forgetOld();
      const settled = now() - settleMs;
      const ids = new Set<string>();
      for (const [id, entry] of finished) {
        if (entry.succeeded && entry.at < settled) ids.add(id);
      }
      return ids;
    },
  };
}
