import type { WorkerEvents } from "graphile-worker";
import type { Database } from "@/lib/db/client";
import { dueJobsWaiting } from "@/lib/pipeline/due-jobs";

/**
 * The engine's `slotWanted` for one runner: every one of its slots taken (from graphile-worker's
 * events, which every runner of this process shares: a job counts only if its task is this
 * runner's) and a due job of its tasks waiting. The query is made only when the slots are full.
 */
export function slotWantedOf(
  events: WorkerEvents,
  runner: { db: Database; tasks: readonly string[]; concurrency: number },
): () => Promise<boolean> {
  const mine = new Set(runner.tasks);
  const running = new Set<string>();
  events.on("job:start", ({ job }) => {
    if (mine.has(job.task_identifier)) running.add(job.id);
  });
  events.on("job:complete", ({ job }) => {
    running.delete(job.id);
  });
  return async () => running.size >= runner.concurrency && dueJobsWaiting(runner.db, runner.tasks);
}
