/**
 * A run whose steps advance carries on in its job (lib/pipeline/engine.ts, runTickJob) only
 * while no due job waits for the slot: with every slot of the worker taken, runs take turns.
 * Real graphile-worker, real Postgres; the evidence is the engine's step_visits.
 */
import { afterEach, describe, expect, it } from "vitest";
import { asc, inArray, sql } from "drizzle-orm";
import { runs, stepVisits } from "@/lib/db/schema";
import { dueJobsWaiting } from "@/lib/pipeline/due-jobs";
import { TICK_TASK } from "@/lib/pipeline/schedule";
import { advance, definePipeline, type Step } from "@/lib/pipeline/step";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "./runner";

const database = registerTestDatabase();

let worker: WorkerHandle | null = null;
afterEach(async () => {
  await worker?.stop();
  worker = null;
});

const quick = (name: string): Step<object> => ({
  name,
  maxDuration: () => 60,
  visit: async () => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    return advance();
  },
});

const pipeline = definePipeline<object>({
  name: "slot-sharing",
  steps: ["A", "B", "C"].map(quick),
  services: () => ({ services: {}, dispose: async () => {} }),
});

async function startRuns(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++)
    ids.push(
      await database.db.transaction((tx) =>
        startRun(tx, { pipeline, hostId: null, actor: "slot-sharing test" }),
      ),
    );
  return ids;
}

function untilSettled(ids: string[]) {
  return waitFor("the runs to end", async () => {
    const rows = await database.db.select().from(runs).where(inArray(runs.id, ids));
    return rows.every((r) => r.status !== "running") ? rows : null;
  });
}

async function visitOrder(ids: string[]) {
  const rows = await database.db
    .select({ runId: stepVisits.runId, step: stepVisits.step })
    .from(stepVisits)
    .where(inArray(stepVisits.runId, ids))
    .orderBy(asc(stepVisits.startedAt), asc(stepVisits.id));
  return rows.map((r) => `${r.step}${ids.indexOf(r.runId) + 1}`);
}

async function start(concurrency: number) {
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [pipeline.name]: pipeline },
    concurrency,
    pollIntervalMs: 100,
    periodicChecks: false,
    log: () => {},
  });
}

describe("runs share a full worker's slots", () => {
  it("with its one slot taken and another run due, each advance hands the slot over: the runs take turns", async () => {
    const ids = await startRuns(2);
    await start(1);
    const rows = await untilSettled(ids);
    expect(rows.map((r) => r.status)).toEqual(["succeeded", "succeeded"]);
    expect(await visitOrder(ids)).toEqual(["A1", "A2", "B1", "B2", "C1", "C2"]);
  });

  it("with a slot free, a run carries on through its steps in one job, as before", async () => {
    const ids = await startRuns(2);
    await start(4);
    await untilSettled(ids);
    const order = await visitOrder(ids);
    // Each run's visits are one job's: in order, never waiting for the other run's.
    expect(order.filter((v) => v.endsWith("1"))).toEqual(["A1", "B1", "C1"]);
    expect(order.filter((v) => v.endsWith("2"))).toEqual(["A2", "B2", "C2"]);
    const jobs = await database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from graphile_worker._private_jobs`,
    );
    expect(jobs.rows[0]!.n).toBe(0);
  });
});

describe("dueJobsWaiting", () => {
  const add = (task: string, options: string) =>
    database.db.execute(sql.raw(`select graphile_worker.add_job('${task}', '{}'::json${options})`));
  const clear = () => database.db.execute(sql`delete from graphile_worker._private_jobs`);

  it("sees a due, free job of the runner's tasks, and nothing else", async () => {
    await clear();
    expect(await dueJobsWaiting(database.db, [TICK_TASK])).toBe(false);

    await add("some-other-task", "");
    await add(TICK_TASK, ", run_at => now() + interval '1 hour'");
    expect(await dueJobsWaiting(database.db, [TICK_TASK])).toBe(false);

    await add(TICK_TASK, "");
    expect(await dueJobsWaiting(database.db, [TICK_TASK])).toBe(true);
    expect(await dueJobsWaiting(database.db, [])).toBe(false);

    // Taken by a worker: not waiting.
    await database.db.execute(
      sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'w' where run_at <= now()`,
    );
    expect(await dueJobsWaiting(database.db, [TICK_TASK])).toBe(false);
    await clear();
  });

  it("does not count a job behind a named queue another worker holds", async () => {
    await clear();
    await add(TICK_TASK, ", queue_name => 'serial'");
    expect(await dueJobsWaiting(database.db, [TICK_TASK])).toBe(true);
    await database.db.execute(
      sql`update graphile_worker._private_job_queues set locked_at = now(), locked_by = 'w'`,
    );
    expect(await dueJobsWaiting(database.db, [TICK_TASK])).toBe(false);
    await database.db.execute(sql`delete from graphile_worker._private_job_queues`);
    await clear();
  });
});
