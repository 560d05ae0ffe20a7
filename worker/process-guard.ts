import { isDatabaseUnreachable } from "@/lib/db/unreachable";
import { safeErrorSummary } from "@/lib/errors";
import type { WorkerHandle } from "./runner";

/**
 * The worker process's policy for errors nobody caught. graphile-worker 0.17.3 records a
 * finished job without awaiting it, so a database that is away at that moment surfaces here as
 * an unhandled rejection (and a client of some library without an 'error' listener as an
 * uncaught exception). That is an expected state, not a crash: it is the worker's outage line
 * (once per outage), the process keeps going, and the sweep hands the job back (see
 * worker/job-ledger.ts). Anything else is a bug whose consequences nobody knows: it is logged
 * (without a query's parameters) and the process exits, so its supervisor starts a clean one
 * and the dead-worker sweep releases its jobs.
 */
export function guardWorkerProcess(worker: WorkerHandle, log: (line: string) => void): void {
  const onStray = (kind: string) => (error: unknown) => {
    if (isDatabaseUnreachable(error)) {
      worker.reachability.lost(error);
      return;
    }
    log(`${kind}, exiting so a fresh worker takes over: ${safeErrorSummary(error)}`);
    // Only the frames: the message above them may hold a failed query's parameters.
    const frames =
      error instanceof Error
        ? (error.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line))
        : [];
    if (frames.length > 0) log(frames.join("\n"));
    process.exit(1);
  };
  process.on("unhandledRejection", onStray("unhandled rejection"));
  process.on("uncaughtException", onStray("uncaught exception"));
}
