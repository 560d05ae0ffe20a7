import { EventEmitter } from "node:events";
import { Logger, run, type Runner, type Task, type WorkerEvents } from "graphile-worker";
import { createDb } from "@/lib/db/client";
import { trackReachability, type Reachability } from "@/lib/db/reachability";
import { isDatabaseUnreachable } from "@/lib/db/unreachable";
import { safeErrorSummary } from "@/lib/errors";
import { createAbortNotices } from "@/lib/pipeline/abort-notices";
import type { EngineOptions } from "@/lib/pipeline/engine";
import { inQueryScope } from "@/lib/pipeline/query-scope";
import { createWaitRegistry, type WaitRegistry } from "@/lib/pipeline/waits";
import { createSshConnectionPool, type SshConnectionPool } from "@/lib/ssh/pool";
import {
  beat,
  forgetWorkers,
  HEARTBEAT_INTERVAL_MS,
  recoverDeadWorkers,
  releaseStrandedJobs,
  staleAfterSecondsAt,
} from "@/lib/pipeline/recovery";
import { POWER_TICK_TASK, TICK_TASK } from "@/lib/pipeline/schedule";
import {
  queueSelfTest,
  SELF_TEST_CRONTAB,
  SELF_TEST_TASK,
} from "@/lib/power/self-test/queue-self-test";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { DEFAULT_WORKER_CONCURRENCY } from "./concurrency";
import { createJobLedger, SETTLE_MS } from "./job-ledger";
import { slotWantedOf } from "./slot-watch";
import { NOTIFY_DELIVER_TASK } from "@/lib/notify/enqueue";
import type { DeliveryOptions } from "@/lib/notify/deliver";
import { createNotifyDeliverTask } from "./tasks/notify-deliver";
import { createPowerSelfTestTask } from "./tasks/power-self-test";
import { listenForRunNotices } from "./run-notices";
import { createRunTickTask } from "./tasks/run-tick";
import {
  CLUSTER_REFRESH_CRONTAB,
  CLUSTER_REFRESH_TASK,
  createClusterRefreshTask,
} from "@/lib/power/cluster-refresh/refresh-task";
import { untilDatabaseAnswers } from "./wait-for-database";
import {
  createVmTemplateCheckTask,
  VM_TEMPLATE_CHECK_CRONTAB,
  VM_TEMPLATE_CHECK_TASK,
} from "./tasks/vm-template-check";

export type WorkerOptions = {
  connectionString: string;
  pipelines: Readonly<Record<string, AnyPipeline>>;
  concurrency?: number;
  /** Ticks of power runs in parallel, on their own runner, pool and slots (default 2). */
  powerConcurrency?: number;
  /** How often graphile-worker looks for jobs that became due (new jobs arrive via LISTEN). */
  pollIntervalMs?: number;
  engine?: Omit<EngineOptions, "db" | "pipelines">;
  recoveryIntervalMs?: number;
  log?: (line: string) => void;
  /**
   * Periodic checks on graphile-worker's crontab (the pre-sale VmTemplateCheck every 15 min,
   * the power self-test hourly, the power clusters' membership every minute).
   * Default on; tests that count API requests may turn them off. The task itself is always
   * registered, so a queued check runs either way.
   */
  periodicChecks?: boolean;
  /** graphile-worker's event emitter, for callers that measure (benchmarks). */
  events?: WorkerEvents;
  /**
   * graphile-worker's runner stopped without stop() being called (it does not for a lost
   * database: it polls and re-LISTENs by itself; it does for a breaking migration by a newer
   * worker, or a worker that exited). Default: one log line. A worker process exits instead,
   * so its supervisor starts a fresh one rather than keeping a process that beats its heartbeat
   * and takes no job.
   */
  onUnexpectedStop?: (reason: string) => void;
  /** Webhook deliveries' deadline and backoff (lib/notify); tests shorten them. */
  notify?: DeliveryOptions;
};

export type WorkerHandle = {
  stop(): Promise<void>;
  runner: Runner;
  /** The runner of power ticks (lib/power): never behind onboarding's queue. */
  powerRunner: Runner;
  workerIds(): string[];
  /** This process's view of its database (one log line when it goes away, one when it is back). */
  reachability: Reachability;
  /** Runs this process watches while they wait (lib/pipeline/waits.ts). */
  waits: WaitRegistry;
  /** The SSH connections its ticks and waiters share (lib/ssh/pool.ts). */
  sshConnections: SshConnectionPool;
};

/**
 * Starts graphile-worker with the run-tick task (and, on a runner of its own, the power-tick
 * task), the heartbeat of its workers, and the sweep that releases jobs of dead workers (see
 * lib/pipeline/recovery.ts).
 */
export async function startWorker(options: WorkerOptions): Promise<WorkerHandle> {
  const concurrency = options.concurrency ?? DEFAULT_WORKER_CONCURRENCY;
  const log = options.log ?? ((line: string) => console.log(line));
  const reachability = trackReachability({
    log,
    meanwhile: "ticks wait and resume by themselves once it is back",
  });
  /** A failure of the database's making is reported once per outage; anything else, as it comes. */
  const report = (what: string, error: unknown) => {
    if (isDatabaseUnreachable(error)) reachability.lost(error);
    else log(`${what}: ${safeErrorSummary(error)}`);
  };
  // Each concurrent tick holds a connection for its visit; graphile-worker needs its own too.
  const { pool, db } = createDb(options.connectionString, concurrency * 2 + 4, reachability);
  // PostgreSQL may go away again between "it answers" and the end of this start: whatever was
  // set up is then taken down, so the caller can start afresh without a leaked runner or pool.
  let stopped = false;
  const undo: (() => Promise<unknown>)[] = [() => pool.end()];
  const orUndo = async <T>(part: () => Promise<T>): Promise<T> => {
    try {
      return await part();
    } catch (error) {
      stopped = true; // a runner ended here is not "stopped by itself"
      for (const each of undo.reverse()) await each().catch(() => {});
      throw error;
    }
  };
  // Waiting runs are watched here, outside the job slots, over the SSH connections the ticks
  // keep; an abort request reaches a visit in flight through this process's LISTEN.
  const waits = createWaitRegistry({ db, log });
  const abortNotices = createAbortNotices();
  const sshConnections = createSshConnectionPool();
  undo.push(async () => sshConnections.close());
  undo.push(() => waits.close());
  const events: WorkerEvents = options.events ?? new EventEmitter();
  const otherTasks: Record<string, Task> = {
    [VM_TEMPLATE_CHECK_TASK]: createVmTemplateCheckTask(db),
    [CLUSTER_REFRESH_TASK]: createClusterRefreshTask(db),
    [SELF_TEST_TASK]: createPowerSelfTestTask(db),
    [NOTIFY_DELIVER_TASK]: createNotifyDeliverTask(db, options.notify),
  };
  // A run that advances carries on in its job only while no due job waits for the slot: with
  // every slot taken, ten onboardings share eight slots in turn instead of two waiting for all
  // eight to reach their first wait.
  const engine: EngineOptions = {
    ...options.engine,
    db,
    pipelines: options.pipelines,
    waits,
    abortNotices,
    resources: { sshConnections },
    slotWanted: slotWantedOf(events, {
      db,
      tasks: [TICK_TASK, ...Object.keys(otherTasks)],
      concurrency,
    }),
  };
  const workerIds = new Set<string>();
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
  // graphile-worker retries a failed job fetch every poll interval by itself, logging it only
  // at debug level: these events are how this process learns the database went and came back.
  events.on("worker:getJob:error", ({ error }) => report("fetching a job failed", error));
  events.on("worker:getJob:empty", () => reachability.answered());
  events.on("job:start", () => reachability.answered());
  const ledger = createJobLedger(events);

  // Per-job INFO lines would drown the console's own output; warnings and errors pass, with
  // a failed query's parameters cut off (they may hold a sealed secret or a log line). Its
  // errors about a lost database (LISTEN retries, failed ticks, cron) are the one outage line.
  const logger = new Logger(() => (level, message, meta) => {
    const error = meta?.error ?? meta?.fatalError;
    if (error !== undefined && isDatabaseUnreachable(error)) reachability.lost(error);
    else if (level === "error" || level === "warning") {
      log(`graphile-worker ${level}: ${withoutQueryParams(message)}`);
    }
  });
  await orUndo(() => untilDatabaseAnswers(pool, reachability));
  const notices = listenForRunNotices({
    connectionString: options.connectionString,
    abortNotices,
    waits,
    // During an outage the worker's own line says it; the LISTEN reconnects by itself.
    log: (line) => reachability.reachable && log(line),
  });
  undo.push(() => notices.close());
  const runner = await orUndo(() =>
    run({
      pgPool: pool,
      concurrency,
      noHandleSignals: true,
      pollInterval: options.pollIntervalMs ?? 1000,
      taskList: { [TICK_TASK]: createRunTickTask(engine), ...otherTasks },
      crontab:
        options.periodicChecks === false
          ? ""
          : [VM_TEMPLATE_CHECK_CRONTAB, SELF_TEST_CRONTAB, CLUSTER_REFRESH_CRONTAB].join("\n"),
      events,
      logger,
    }),
  );
  undo.push(() => runner.stop());
  // The power self-test at start-up (and hourly on the crontab): a broken shutdown path shows
  // before the outage. Workers starting together queue it once (one job key).
  if (options.periodicChecks !== false) {
    await queueSelfTest(db, "start-up").catch((error: unknown) =>
      report("queueing the start-up power self-test failed", error),
    );
  }
  // Power ticks run on a runner of their own, with their own pool and slots: a shutdown never
  // waits behind onboardings' visits or a full pool.
  const powerConcurrency = options.powerConcurrency ?? 2;
  const power = createDb(options.connectionString, powerConcurrency * 2 + 2, reachability);
  undo.push(() => power.pool.end());
  const powerRunner = await orUndo(() =>
    run({
      pgPool: power.pool,
      concurrency: powerConcurrency,
      noHandleSignals: true,
      pollInterval: options.pollIntervalMs ?? 1000,
      taskList: {
        [POWER_TICK_TASK]: createRunTickTask({
          ...engine,
          db: power.db,
          slotWanted: slotWantedOf(events, {
            db: power.db,
            tasks: [POWER_TICK_TASK],
            concurrency: powerConcurrency,
          }),
        }),
      },
      events,
      logger,
    }),
  );
  undo.push(() => powerRunner.stop());
  const onUnexpectedStop =
    options.onUnexpectedStop ??
    ((reason: string) => log(`graphile-worker stopped by itself (${reason}); no job is taken`));
  for (const each of [runner, powerRunner]) {
    each.promise.then(
      () => stopped || onUnexpectedStop("its worker pool ended"),
      (error: unknown) => stopped || onUnexpectedStop(safeErrorSummary(error)),
    );
  }

  const ids = () => [...workerIds];
  await orUndo(() => inQueryScope("worker", () => beat(db, ids())));
  const sweep = () => inQueryScope("worker", sweepOnce);
  const sweepOnce = async () => {
    try {
      const recovered = await recoverDeadWorkers(db, ids(), {
        staleAfterSeconds: staleAfterSecondsAt(Date.now(), reachability.backSince),
      });
      if (recovered.unlockedWorkers.length > 0) {
        log(`released jobs of dead workers ${recovered.unlockedWorkers.join(", ")}`);
      }
      if (recovered.rescheduledRuns.length > 0) {
        log(`rescheduled runs that had lost their tick: ${recovered.rescheduledRuns.join(", ")}`);
      }
      const stranded = await releaseStrandedJobs(
        db,
        ids(),
        { busy: ledger.busy(), succeeded: ledger.succeeded() },
        SETTLE_MS / 1000,
      );
      if (stranded.completed.length > 0) {
        log(
          `jobs done before the database went away, recorded now: ${stranded.completed.join(", ")}`,
        );
      }
      if (stranded.released.length > 0) {
        log(
          `jobs whose end was lost with the database, handed back: ${stranded.released.join(", ")}`,
        );
      }
    } catch (error) {
      report("recovery sweep failed (will retry)", error);
    }
  };
  await sweep();
  const heartbeat = setInterval(() => {
    inQueryScope("worker", () => beat(db, ids())).then(
      () => reachability.answered(),
      (error: unknown) => report("heartbeat failed (will retry)", error),
    );
  }, HEARTBEAT_INTERVAL_MS);
  const sweeper = setInterval(() => void sweep(), options.recoveryIntervalMs ?? 10_000);

  return {
    runner,
    powerRunner,
    workerIds: ids,
    reachability,
    waits,
    sshConnections,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      clearInterval(sweeper);
      const known = ids();
      await Promise.all([runner.stop(), powerRunner.stop()]);
      // The ticks are done: no waiter may keep a loop on a host, nor the pool a connection.
      await waits.close();
      sshConnections.close();
      await notices.close();
      await forgetWorkers(db, known).catch(() => {});
      await Promise.all([pool.end(), power.pool.end()]);
    },
  };
}

/**
 * The database can go away again while the worker starts (it waited for it, then PostgreSQL
 * restarted mid-way): that is the outage the worker is built to ride out, so it starts afresh
 * once the database answers instead of exiting. Anything else still fails the start at once.
 */
export async function startWorkerThroughDatabaseRestarts(
  options: WorkerOptions,
  retryMs = 1000,
): Promise<WorkerHandle> {
  const log = options.log ?? ((line: string) => console.log(line));
  for (;;) {
    try {
      return await startWorker(options);
    } catch (error) {
      if (!isDatabaseUnreachable(error)) throw error;
      log(
        `the database went away while starting (${safeErrorSummary(error)}); starting again once it answers`,
      );
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}

/**
 * Drizzle's "Failed query: … \nparams: …" without the parameters, to the end of the message: a
 * parameter may span lines (a private key), so nothing after "params:" is trusted.
 */
export function withoutQueryParams(message: string): string {
  return message.replace(/\n\s*params:[\s\S]*$/, "\n  params: (not logged)");
}
