import { EventEmitter } from "node:events";
import { Logger, run, type Runner, type WorkerEvents } from "graphile-worker";
import { createDb } from "@/lib/db/client";
import type { EngineOptions } from "@/lib/pipeline/engine";
import {
  beat,
  forgetWorkers,
  HEARTBEAT_INTERVAL_MS,
  recoverDeadWorkers,
} from "@/lib/pipeline/recovery";
import { TICK_TASK } from "@/lib/pipeline/schedule";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { createRunTickTask } from "./tasks/run-tick";
import {
  createVmTemplateCheckTask,
  VM_TEMPLATE_CHECK_CRONTAB,
  VM_TEMPLATE_CHECK_TASK,
} from "./tasks/vm-template-check";

export type WorkerOptions = {
  connectionString: string;
  pipelines: Readonly<Record<string, AnyPipeline>>;
  concurrency?: number;
  /** How often graphile-worker looks for jobs that became due (new jobs arrive via LISTEN). */
  pollIntervalMs?: number;
  engine?: Omit<EngineOptions, "db" | "pipelines">;
  recoveryIntervalMs?: number;
  log?: (line: string) => void;
  /**
   * Periodic checks on graphile-worker's crontab (the pre-sale VmTemplateCheck every 15 min).
   * Default on; tests that count API requests may turn them off. The task itself is always
   * registered, so a queued check runs either way.
   */
  periodicChecks?: boolean;
  /** graphile-worker's event emitter, for callers that measure (benchmarks). */
  events?: WorkerEvents;
};

export type WorkerHandle = { stop(): Promise<void>; runner: Runner; workerIds(): string[] };

/**
 * Starts graphile-worker with the run-tick task, the heartbeat of its workers, and the sweep
 * that releases jobs of dead workers (see lib/pipeline/recovery.ts).
 */
export async function startWorker(options: WorkerOptions): Promise<WorkerHandle> {
  const concurrency = options.concurrency ?? 4;
  const log = options.log ?? ((line: string) => console.log(line));
  // Each concurrent tick holds a connection for its visit; graphile-worker needs its own too.
  const { pool, db } = createDb(options.connectionString, concurrency * 2 + 4);
  const engine: EngineOptions = { ...options.engine, db, pipelines: options.pipelines };
  const workerIds = new Set<string>();
  const events: WorkerEvents = options.events ?? new EventEmitter();
  // Jobs are locked in the name of the pool (or of a worker, depending on the queue mode):
  // both beat, so whichever name a job carries can be traced to a living process.
  events.on("pool:create", ({ workerPool }) => {
    workerIds.add(workerPool.id);
  });
  events.on("worker:create", ({ worker }) => {
    workerIds.add(worker.workerId);
  });
  events.on("worker:stop", ({ worker }) => {
    workerIds.delete(worker.workerId);
  });

  const runner = await run({
    pgPool: pool,
    concurrency,
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs ?? 1000,
    taskList: {
      [TICK_TASK]: createRunTickTask(engine),
      [VM_TEMPLATE_CHECK_TASK]: createVmTemplateCheckTask(db),
    },
    crontab: options.periodicChecks === false ? "" : VM_TEMPLATE_CHECK_CRONTAB,
    events,
    // Per-job INFO lines would drown the console's own output; warnings and errors pass, with
    // a failed query's parameters cut off (they may hold a sealed secret or a log line).
    logger: new Logger(() => (level, message) => {
      if (level === "error" || level === "warning") {
        log(`graphile-worker ${level}: ${withoutQueryParams(message)}`);
      }
    }),
  });

  const ids = () => [...workerIds];
  await beat(db, ids());
  const sweep = async () => {
    try {
      const report = await recoverDeadWorkers(db, ids());
      if (report.unlockedWorkers.length > 0) {
        log(`released jobs of dead workers ${report.unlockedWorkers.join(", ")}`);
      }
      if (report.rescheduledRuns.length > 0) {
        log(`rescheduled runs that had lost their tick: ${report.rescheduledRuns.join(", ")}`);
      }
    } catch (error) {
      log(`recovery sweep failed (will retry): ${(error as Error).message}`);
    }
  };
  await sweep();
  const heartbeat = setInterval(() => {
    beat(db, ids()).catch((error: Error) => log(`heartbeat failed (will retry): ${error.message}`));
  }, HEARTBEAT_INTERVAL_MS);
  const sweeper = setInterval(() => void sweep(), options.recoveryIntervalMs ?? 10_000);

  let stopped = false;
  return {
    runner,
    workerIds: ids,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      clearInterval(sweeper);
      const known = ids();
      await runner.stop();
      await forgetWorkers(db, known).catch(() => {});
      await pool.end();
    },
  };
}

/**
 * Drizzle's "Failed query: … \nparams: …" without the parameters, to the end of the message: a
 * parameter may span lines (a private key), so nothing after "params:" is trusted.
 */
export function withoutQueryParams(message: string): string {
  return message.replace(/\n\s*params:[\s\S]*$/, "\n  params: (not logged)");
}
