/**
 * The bench's worker process (`node --import tsx bench/power/worker-process.ts`, started by
 * bench/power.ts): what the console's worker runs for power — graphile-worker with the
 * power-shutdown pipeline on its own runner, and the power monitor (one loop per UPS) — plus
 * the onboarding pipeline the `--load` round keeps busy, and the short pipeline that gives the
 * protected lab node its API token and pinned certificate. A process of its own, so the lab's
 * servers (in the bench process) do not share its event loop.
 *
 * Asked `{ stats: true }` over IPC it answers `{ stats: WorkerStats }` (counted since the last
 * ask): its CPU, event-loop delay, and every query its pools sent — by whose (the engine's, a
 * step's, the worker's upkeep, graphile-worker's or the power monitor's) with the time each one
 * waited for a free connection of its pool. `BENCH_POWER_CONCURRENCY=N` starts the power runner
 * with N slots (its pool 2N + 2) instead of the product's default 2.
 */
import { AsyncResource } from "node:async_hooks";
import { monitorEventLoopDelay } from "node:perf_hooks";
import pg from "pg";
import { currentQueryScope } from "@/lib/pipeline/query-scope";
import { startPowerMonitor } from "@/lib/power/monitor/power-monitor";
import { powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import type { OnboardingConfig } from "@/lib/steps/onboarding/config";
import { startWorker } from "@/worker/runner";
import { hostAccessPipeline } from "./host-access";

export type PowerWorkerSettings = {
  url: string;
  /** null: no onboarding pipeline (the fleet bench needs none). */
  onboarding: OnboardingConfig | null;
};

type Scope = "engine" | "step" | "worker" | "other";
export type QueryStats = { queries: number; poolWaitMs: number; maxPoolWaitMs: number };
export type WorkerStats = {
  cpuSeconds: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  byScope: Record<Scope, QueryStats>;
  /** The steps' statements by kind (their text's start), most frequent first. */
  stepStatements: [string, number][];
};

/** Every query and every wait for a pooled connection of this process, by whose it is. */
function countQueries() {
  const empty = (): Record<Scope, QueryStats> => ({
    engine: { queries: 0, poolWaitMs: 0, maxPoolWaitMs: 0 },
    step: { queries: 0, poolWaitMs: 0, maxPoolWaitMs: 0 },
    worker: { queries: 0, poolWaitMs: 0, maxPoolWaitMs: 0 },
    other: { queries: 0, poolWaitMs: 0, maxPoolWaitMs: 0 },
  });
  let stats = empty();
  let statements = new Map<string, number>();
  const scope = (): Scope => currentQueryScope() ?? "other";
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const of = scope();
    stats[of].queries++;
    if (of === "step") {
      const first = args[0] as string | { text?: string } | undefined;
      const text = (typeof first === "string" ? first : (first?.text ?? "?"))
        .replace(/\s+/g, " ")
        .slice(0, 90);
      statements.set(text, (statements.get(text) ?? 0) + 1);
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  const connect = pg.Pool.prototype.connect;
  pg.Pool.prototype.connect = function (this: pg.Pool, ...args: unknown[]) {
    const started = performance.now();
    const of = scope();
    const waited = () => {
      const ms = performance.now() - started;
      stats[of].poolWaitMs += ms;
      stats[of].maxPoolWaitMs = Math.max(stats[of].maxPoolWaitMs, ms);
    };
    const callback = args[0];
    if (typeof callback === "function") {
      // pg-pool hands a released connection to the next waiter from the releaser's async
      // context: bound here, the waiter's queries count as its own, not the releaser's.
      return (connect as (...a: unknown[]) => unknown).call(
        this,
        AsyncResource.bind((...result: unknown[]) => {
          waited();
          return (callback as (...a: unknown[]) => unknown)(...result);
        }),
      );
    }
    const connecting = (connect as () => Promise<pg.PoolClient>).call(this);
    void connecting.then(waited, () => {});
    return connecting;
  } as typeof connect;
  return () => {
    const taken = { byScope: stats, stepStatements: [...statements].sort((a, b) => b[1] - a[1]) };
    stats = empty();
    statements = new Map();
    return taken;
  };
}

async function main() {
  const { url, onboarding } = JSON.parse(process.env.BENCH_POWER_WORKER!) as PowerWorkerSettings;
  const takeQueryStats = countQueries();
  const onboard = onboarding ? createOnboardHostPipeline(onboarding) : null;
  const powerConcurrency = process.env.BENCH_POWER_CONCURRENCY
    ? Number(process.env.BENCH_POWER_CONCURRENCY)
    : undefined;
  const worker = await startWorker({
    connectionString: url,
    pipelines: {
      ...(onboard ? { [onboard.name]: onboard } : {}),
      [hostAccessPipeline.name]: hostAccessPipeline,
      [powerShutdownPipeline.name]: powerShutdownPipeline,
    },
    ...(powerConcurrency ? { powerConcurrency } : {}),
    periodicChecks: false,
    log: () => {},
  });
  const monitor = await startPowerMonitor({
    connectionString: url,
    log: (line) => console.error(`[bench worker] ${line}`),
  });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let cpu = process.cpuUsage();
  process.on("message", (message: { stats?: boolean }) => {
    if (!message.stats) return;
    const used = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    const stats: WorkerStats = {
      cpuSeconds: (used.user + used.system) / 1e6,
      loopDelayP99Ms: delay.percentile(99) / 1e6,
      loopDelayMaxMs: delay.max / 1e6,
      ...takeQueryStats(),
    };
    delay.reset();
    process.send!({ stats });
  });
  process.send!({ ready: true });
  if (process.env.BENCH_POWER_LOOP_DELAY === "1") {
    const every = monitorEventLoopDelay({ resolution: 10 });
    every.enable();
    setInterval(() => {
      const ms = (ns: number) => (ns / 1e6).toFixed(0);
      console.error(
        `[bench worker] event-loop delay p50 ${ms(every.percentile(50))} ms, p99 ${ms(every.percentile(99))} ms, max ${ms(every.max)} ms`,
      );
      every.reset();
    }, 15_000).unref();
  }
  // Stopped by the bench with SIGTERM (its process group): the monitor hands its lease back.
  process.once("SIGTERM", () => {
    void Promise.all([monitor.stop(), worker.stop()]).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

main().catch((error: Error) => {
  console.error(error);
  process.exit(1);
});
