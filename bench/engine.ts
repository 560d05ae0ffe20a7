/**
 * `npm run bench:engine`: 500 runs of a multi-step in-process pipeline through the real worker
 * (graphile-worker, 4 concurrent ticks) and a real PostgreSQL. Baseline in the same run: the
 * same number of no-op jobs through bare graphile-worker, i.e. what the queue costs alone.
 */
import { EventEmitter } from "node:events";
import { Logger, run, type WorkerEvents } from "graphile-worker";
import { sql } from "drizzle-orm";
import { migrateDatabase } from "@/lib/db/migrate";
import { startRun } from "@/lib/runs/start-run";
import { advance, definePipeline, poll, type Step } from "@/lib/pipeline/step";
import { startWorker } from "@/worker/runner";
import { openBenchDb, startBenchPostgres } from "./support/postgres";
import { percentile, report } from "./support/report";
import { runBench, stopAtEnd } from "./support/run-bench";

const RUNS = Number(process.env.BENCH_RUNS ?? 500);
const CONCURRENCY = 4;

const instant = (name: string): Step<null> => ({
  name,
  maxDuration: () => 60,
  visit: async () => advance(),
});
const pollOnce: Step<null> = {
  name: "PollOnce",
  maxDuration: () => 60,
  async visit(ctx) {
    if (ctx.context.get("polled")) return advance();
    ctx.context.set("polled", true);
    return poll(POLL_MS / 1000, "polling");
  },
};
const pipeline = definePipeline<null>({
  name: "bench",
  steps: [instant("Connect"), pollOnce, instant("Configure"), instant("Register")],
  services: () => ({ services: null, dispose: async () => {} }),
});
const TICKS_PER_RUN = 5;
const PACED_RUNS = 50;
const POLL_MS = 200;

/** Lateness of each visit: when it started minus when it was due (run created, previous visit + delay). */
function dueToStarted(
  visits: { run_id: string; started_at: string; finished_at: string; outcome: string }[],
  created: Map<string, number>,
) {
  const latencies: number[] = [];
  const visitMs: number[] = [];
  let due = 0;
  let previousRun = "";
  for (const v of visits) {
    const started = new Date(v.started_at).getTime();
    const finishedAt = new Date(v.finished_at).getTime();
    if (v.run_id !== previousRun) due = created.get(v.run_id)!;
    latencies.push(started - due);
    visitMs.push(finishedAt - started);
    due = finishedAt + (v.outcome === "poll" ? POLL_MS : 0);
    previousRun = v.run_id;
  }
  return { latencies, visitMs };
}

async function main() {
  const pg = await startBenchPostgres("engine");
  const baselineUrl = await pg.createDatabase("baseline");
  const engineUrl = await pg.createDatabase("engine");
  await migrateDatabase(baselineUrl);
  await migrateDatabase(engineUrl);

  // Baseline: bare graphile-worker, no-op task, same number of jobs as the engine's ticks.
  const jobs = RUNS * TICKS_PER_RUN;
  const base = openBenchDb(baselineUrl, CONCURRENCY + 4);
  await base.db.execute(
    sql`select graphile_worker.add_job('noop', '{}'::json) from generate_series(1, ${jobs})`,
  );
  let done = 0;
  let finished!: () => void;
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  const t0 = performance.now();
  const runner = await run({
    pgPool: base.pool,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    pollInterval: 1000,
    taskList: { noop: async () => void (++done === jobs && finished()) },
    logger: new Logger(() => () => {}),
  });
  // Stopped here, before the engine's round, or at the end if the bench is interrupted first.
  const forgetRunner = stopAtEnd("baseline graphile-worker", () => runner.stop());
  await allDone;
  const baselineSeconds = (performance.now() - t0) / 1000;
  forgetRunner();
  await runner.stop();

  // The engine: RUNS runs of a 4-step pipeline with one poll each (5 ticks per run).
  const { db } = openBenchDb(engineUrl, 8);
  const events: WorkerEvents = new EventEmitter();
  const jobStarted = new Map<string, number>();
  const tickMs: number[] = [];
  events.on("job:start", ({ job }) => jobStarted.set(job.id, performance.now()));
  events.on("job:complete", ({ job }) => {
    const start = jobStarted.get(job.id);
    if (start !== undefined) tickMs.push(performance.now() - start);
  });
  const worker = await startWorker({
    connectionString: engineUrl,
    pipelines: { bench: pipeline },
    concurrency: CONCURRENCY,
    events,
    log: () => {},
  });
  stopAtEnd("engine worker", () => worker.stop());
  const t1 = performance.now();
  for (let i = 0; i < RUNS; i += 50) {
    await db.transaction(async (tx) => {
      for (let j = i; j < Math.min(RUNS, i + 50); j++)
        await startRun(tx, { pipeline, hostId: null, actor: "bench" });
    });
  }
  for (;;) {
    const [row] = (
      await db.execute<{ n: string }>(sql`select count(*) as n from runs where status = 'running'`)
    ).rows;
    if (Number(row?.n) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const engineSeconds = (performance.now() - t1) / 1000;
  const burstEnd = new Date();

  // Paced: one run every 100 ms, the load of a busy fleet rather than a burst of 500.
  for (let i = 0; i < PACED_RUNS; i++) {
    await db.transaction((tx) => startRun(tx, { pipeline, hostId: null, actor: "bench-paced" }));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (;;) {
    const [row] = (
      await db.execute<{ n: string }>(sql`select count(*) as n from runs where status = 'running'`)
    ).rows;
    if (Number(row?.n) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await worker.stop();

  const allVisits = (
    await db.execute<{
      run_id: string;
      started_at: string;
      finished_at: string;
      outcome: string;
      run_created: string;
    }>(
      sql`select v.run_id, v.started_at, v.finished_at, v.outcome, r.created_at as run_created
          from step_visits v join runs r on r.id = v.run_id order by v.run_id, v.id`,
    )
  ).rows;
  const visits = allVisits.filter((v) => new Date(v.run_created) < burstEnd);
  const pacedVisits = allVisits.filter((v) => new Date(v.run_created) >= burstEnd);
  const created = new Map(
    (
      await db.execute<{ id: string; created_at: string }>(sql`select id, created_at from runs`)
    ).rows.map((r) => [r.id, new Date(r.created_at).getTime()]),
  );
  const failed = (
    await db.execute<{ n: string }>(sql`select count(*) as n from runs where status <> 'succeeded'`)
  ).rows[0];
  const { latencies, visitMs } = dueToStarted(visits, created);
  const paced = dueToStarted(pacedVisits, created).latencies;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  report("runs", RUNS, "runs");
  report("failed runs", Number(failed?.n), "runs");
  report("ticks", visits.length, "ticks");
  report("baseline bare graphile-worker throughput", jobs / baselineSeconds, "jobs/s");
  report("engine throughput", visits.length / engineSeconds, "ticks/s");
  report(
    "engine throughput vs baseline",
    (visits.length / engineSeconds / (jobs / baselineSeconds)) * 100,
    "%",
  );
  report("engine overhead per tick", mean(tickMs) - mean(visitMs), "ms");
  report("mean tick duration", mean(tickMs), "ms");
  report("due→started latency p50 (burst of all runs at once)", percentile(latencies, 50), "ms");
  report("due→started latency p99 (burst of all runs at once)", percentile(latencies, 99), "ms");
  report(
    `due→started latency p50 (paced, ${PACED_RUNS} runs 100 ms apart)`,
    percentile(paced, 50),
    "ms",
  );
  report(
    `due→started latency p99 (paced, ${PACED_RUNS} runs 100 ms apart)`,
    percentile(paced, 99),
    "ms",
  );
}

runBench(main);
