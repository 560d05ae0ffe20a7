import { describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { runs } from "@/lib/db/schema";
import { abortRun } from "@/lib/runs/abort-run";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { createAbortNotices } from "./abort-notices";
import { ABORT_REASON, tickRun, type EngineOptions } from "./engine";
import { advance, definePipeline, pollUntil, type Step, type Waiter } from "./step";
import { createWaitRegistry, wakeRun } from "./waits";

const testDatabase = registerTestDatabase(5);

/** A waiter the test answers: `settle(true)` = "something changed". */
function controlledWaiter() {
  let settle: (changed: boolean) => void = () => {};
  let aborted = false;
  const started = { value: false };
  const waiter: Waiter = {
    what: "a test's status",
    wait: (signal) =>
      new Promise<boolean>((resolve) => {
        started.value = true;
        settle = resolve;
        signal.addEventListener("abort", () => {
          aborted = true;
          resolve(false);
        });
      }),
  };
  return { waiter, settle: (changed: boolean) => settle(changed), aborted: () => aborted, started };
}

function setup(visit: Step<null>["visit"], extra: Partial<Step<null>> = {}) {
  const pipeline = definePipeline<null>({
    name: `waits-${Math.random()}`,
    steps: [{ name: "Wait", maxDuration: () => 600, visit, ...extra }],
    services: () => ({ services: null, dispose: async () => {} }),
  });
  const waits = createWaitRegistry({ db: testDatabase.db, minWakeIntervalMs: 0 });
  const abortNotices = createAbortNotices();
  const options: EngineOptions = {
    db: testDatabase.db,
    pipelines: { [pipeline.name]: pipeline },
    waits,
    abortNotices,
  };
  return {
    options,
    waits,
    abortNotices,
    start: () =>
      testDatabase.db.transaction((tx) => startRun(tx, { pipeline, hostId: null, actor: "test" })),
  };
}

async function tickJobs(runId: string) {
  const result = await testDatabase.db.execute<{ run_at: string; key: string | null }>(sql`
    select run_at, key from graphile_worker._private_jobs where payload->>'runId' = ${runId}`);
  return result.rows.map((row) => ({ runAt: new Date(row.run_at), key: row.key }));
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("waiting outside the worker's slots", () => {
  it("the tick returns at once; the waiter runs after the commit, and its change moves the run's pending tick to now (the same job, not a second one)", async () => {
    const watched = controlledWaiter();
    const e = setup(async () => pollUntil(watched.waiter, 30, "waiting for the host"));
    const runId = await e.start();
    // The waiter settles only when the test says so: a tick that waited for it would never end.
    expect(await tickRun(e.options, runId)).toMatchObject({ outcome: "poll" });
    const [polled] = await tickJobs(runId);
    expect(polled!.runAt.getTime()).toBeGreaterThan(Date.now() + 25_000);
    await until(() => watched.started.value, "the waiter to start");
    expect(e.waits.watching()).toEqual([runId]);

    watched.settle(true);
    await until(async () => e.waits.stats.woke === 1, "the wake-up");
    const jobs = await tickJobs(runId);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.key).toBe(`run:${runId}`);
    expect(jobs[0]!.runAt.getTime()).toBeLessThan(Date.now() + 1000);
    const [row] = await testDatabase.db.select().from(runs).where(eq(runs.id, runId));
    expect(row!.nextTickAt!.getTime()).toBeLessThan(Date.now() + 1000);
    expect(e.waits.watching()).toEqual([]);
    await e.waits.close();
  });

  it("no change seen, or the run moved on (a later visit, another tick holding the row): nothing is moved", async () => {
    const watchers: ReturnType<typeof controlledWaiter>[] = [];
    const e = setup(async () => {
      const next = controlledWaiter();
      watchers.push(next);
      return pollUntil(next.waiter, 30);
    });
    const runId = await e.start();
    await tickRun(e.options, runId);
    await until(() => watchers[0]?.started.value === true, "the first waiter");
    const [first] = await tickJobs(runId);
    watchers[0]!.settle(false);
    await until(() => e.waits.watching().length === 0, "the first waiter to end");
    expect((await tickJobs(runId))[0]!.runAt).toEqual(first!.runAt);

    // A tick of the run ends the waiter it had (visit 2 reads for itself) ...
    await tickRun(e.options, runId);
    await until(() => watchers[1]?.started.value === true, "the second waiter");
    await tickRun(e.options, runId);
    expect(watchers[1]!.aborted()).toBe(true);
    // ... and a wake-up for an earlier visit moves nothing.
    const [current] = await tickJobs(runId);
    expect(await wakeRun(testDatabase.db, { runId, step: "Wait", visit: 2, seconds: 30 })).toBe(
      false,
    );
    expect((await tickJobs(runId))[0]!.runAt).toEqual(current!.runAt);
    // Nor one while a tick holds the row: that tick decides and schedules for itself.
    const client = await testDatabase.pool.connect();
    try {
      await client.query("begin");
      await client.query("select 1 from runs where id = $1 for no key update", [runId]);
      expect(await wakeRun(testDatabase.db, { runId, step: "Wait", visit: 3, seconds: 30 })).toBe(
        false,
      );
    } finally {
      await client.query("rollback");
      client.release();
    }
    expect(await wakeRun(testDatabase.db, { runId, step: "Wait", visit: 3, seconds: 30 })).toBe(
      true,
    );
    await e.waits.close();
    expect(watchers[2]!.aborted()).toBe(true);
  });

  it("a poll due within 2 s is left to its own tick: no waiter starts", async () => {
    const watched = controlledWaiter();
    const e = setup(async () => pollUntil(watched.waiter, 1));
    const runId = await e.start();
    await tickRun(e.options, runId);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(watched.started.value).toBe(false);
    expect(e.waits.watching()).toEqual([]);
    await e.waits.close();
  });

  it("close() ends every waiter and starts none after it", async () => {
    const watched = controlledWaiter();
    const e = setup(async () => pollUntil(watched.waiter, 30));
    const runId = await e.start();
    await tickRun(e.options, runId);
    await until(() => watched.started.value, "the waiter to start");
    await e.waits.close();
    expect(watched.aborted()).toBe(true);
    const late = controlledWaiter();
    e.waits.watch({ runId, step: "Wait", visit: 1, seconds: 30 }, late.waiter);
    expect(late.started.value).toBe(false);
    expect(e.waits.watching()).toEqual([]);
  });

  it("an abort heard during a visit fires the visit's signal; the step's abort runs in that tick and the run ends aborted", async () => {
    let signalFired = false;
    let aborts = 0;
    const e = setup(
      (ctx) =>
        new Promise((resolve, reject) => {
          const timer = setTimeout(() => resolve(advance("never cut short")), 30_000);
          ctx.signal.addEventListener("abort", () => {
            signalFired = true;
            clearTimeout(timer);
            reject(new Error("the visit's command was stopped"));
          });
        }),
      {
        async abort(ctx) {
          // A fresh signal: the clean-up's commands must not die with the visit's.
          expect(ctx.signal.aborted).toBe(false);
          aborts += 1;
        },
      },
    );
    const runId = await e.start();
    const ticking = tickRun(e.options, runId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await abortRun(testDatabase.db, { runId, actor: "operator" });
    e.abortNotices.requested(runId); // what the worker's LISTEN does on the run's notification
    // Cut short by the signal: left alone, the visit would have advanced after 30 s.
    expect(await ticking).toMatchObject({ outcome: "fail", runStatus: "failed" });
    expect(signalFired).toBe(true);
    expect(aborts).toBe(1);
    const [row] = await testDatabase.db.select().from(runs).where(eq(runs.id, runId));
    expect(row).toMatchObject({ status: "failed", failureReason: ABORT_REASON, errorCount: 0 });
    await e.waits.close();
  });
});
