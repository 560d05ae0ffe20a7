import type { WorkerEvents } from "graphile-worker";

/**
 * How many of one runner's slots are taken, from graphile-worker's events (which every runner
 * of this process shares: a job counts here only if its task is this runner's).
 */
export type SlotWatch = { allTaken(): boolean };

export function createSlotWatch(
  events: WorkerEvents,
  tasks: readonly string[],
  concurrency: number,
): SlotWatch {
  const mine = new Set(tasks);
  const running = new Set<string>();
  events.on("job:start", ({ job }) => {
    if (mine.has(job.task_identifier)) running.add(job.id);
  });
  events.on("job:complete", ({ job }) => {
    running.delete(job.id);
  });
  return { allTaken: () => running.size >= concurrency };
}
