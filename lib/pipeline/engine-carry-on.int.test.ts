import { describe, expect, it } from "vitest";
import { asc, eq, sql } from "drizzle-orm";
import { runOnce, type Task } from "graphile-worker";
import { runs, stepVisits } from "@/lib/db/schema";
import { abortRun } from "@/lib/runs/abort-run";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { createRunTickTask } from "@/worker/tasks/run-tick";
import { ABORT_REASON, runTickJob, type EngineOptions } from "./engine";
import { TICK_TASK } from "./schedule";
import { advance, definePipeline, type Step } from "./step";

const testDatabase = registerTestDatabase(5);

type Services = { step: string };

function step(name: string, visit: Step<Services>["visit"]): Step<Services> {
  return { name, maxDuration: () => 60, visit };
}

function engine(
  pipelineSteps: Step<Services>[],
  services: (step: string) => Services = (name) => ({ step: name }),
  overrides: Partial<EngineOptions> = {},
) {
  const pipeline = definePipeline<Services>({
    name: `carry-on-${Math.random()}`,
    steps: pipelineSteps,
    services: (scope) => ({ services: services(scope.step), dispose: async () => {} }),
  });
  const options: EngineOptions = {
    db: testDatabase.db,
    pipelines: { [pipeline.name]: pipeline },
    ...overrides,
  };
  return {
    options,
    start: () =>
      testDatabase.db.transaction((tx) => startRun(tx, { pipeline, hostId: null, actor: "test" })),
  };
}

async function loadRun(runId: string) {
  const [run] = await testDatabase.db.select().from(runs).where(eq(runs.id, runId));
  return run!;
}

async function visitsOf(runId: string) {
  return testDatabase.db
    .select({ step: stepVisits.step, visit: stepVisits.visit, outcome: stepVisits.outcome })
    .from(stepVisits)
    .where(eq(stepVisits.runId, runId))
    .orderBy(asc(stepVisits.startedAt), asc(stepVisits.id));
}

async function pendingJobs(runId: string) {
  const result = await testDatabase.db.execute<{
    run_at: string;
    payload: unknown;
    attempts: number;
    last_error: string | null;
  }>(sql`
    select run_at, payload, attempts, last_error from graphile_worker._private_jobs
    where payload->>'runId' = ${runId} order by id`);
  return result.rows.map((row) => ({
    runAt: new Date(row.run_at),
    payload: row.payload,
    attempts: row.attempts,
    lastError: row.last_error,
  }));
}

/** Runs every due tick job through graphile-worker itself, counting the jobs it ran for `runId`. */
async function runDueJobs(options: EngineOptions, runId: string): Promise<number> {
  let jobs = 0;
  const task = createRunTickTask(options);
  const counted: Task = async (payload, helpers) => {
    if ((payload as { runId?: string }).runId === runId) jobs += 1;
    await task(payload, helpers);
  };
  await runOnce({
    connectionString: testDatabase.url,
    taskList: { [TICK_TASK]: counted },
    noHandleSignals: true,
  });
  return jobs;
}

describe("a tick job carrying a run on through steps that advance", () => {
  it("runs all three visits of a pipeline whose steps advance at once in one job, each committed before the next starts", async () => {
    const seenByNextVisit: string[] = [];
    const seeCommittedStep = async (name: string, runId: string) => {
      // Read outside the visit's transaction: the previous advance must already be committed.
      seenByNextVisit.push(`${name} sees ${(await loadRun(runId)).currentStep}`);
      return advance();
    };
    const e = engine([
      step("A", async ({ runId }) => seeCommittedStep("A", runId)),
      step("B", async ({ runId }) => seeCommittedStep("B", runId)),
      step("C", async ({ runId }) => seeCommittedStep("C", runId)),
    ]);
    const runId = await e.start();

    expect(await runDueJobs(e.options, runId)).toBe(1);

    expect(seenByNextVisit).toEqual(["A sees A", "B sees B", "C sees C"]);
    expect(await visitsOf(runId)).toEqual([
      { step: "A", visit: 1, outcome: "advance" },
      { step: "B", visit: 1, outcome: "advance" },
      { step: "C", visit: 1, outcome: "advance" },
    ]);
    expect((await loadRun(runId)).status).toBe("succeeded");
    // Its completion is written a moment after runOnce returns, as a failure is (below).
    await expect.poll(() => pendingJobs(runId), { timeout: 10_000 }).toEqual([]);
  });

  it("queues the next tick as a new job once the job has made its bound of visits", async () => {
    const e = engine(
      [
        step("A", async () => advance()),
        step("B", async () => advance()),
        step("C", async () => advance()),
      ],
      undefined,
      { carryOn: { maxVisits: 2, maxSeconds: 30 } },
    );
    const runId = await e.start();
    const results = await runTickJob(e.options, runId);
    expect(results.map((r) => r.kind === "visited" && r.step)).toEqual(["A", "B"]);
    const run = await loadRun(runId);
    expect(run.currentStep).toBe("C");
    const [job] = await pendingJobs(runId);
    expect(job!.payload).toEqual({ runId });
    expect(Math.abs(job!.runAt.getTime() - run.nextTickAt!.getTime())).toBeLessThan(1000);
  });

  it("leaves the run where its committed row says when the job dies between two visits, and the next visit happens exactly once", async () => {
    let bVisits = 0;
    let failServices = true;
    const e = engine(
      [
        step("A", async () => advance()),
        step("B", async () => {
          bVisits += 1;
          return advance();
        }),
        step("C", async () => advance()),
      ],
      (name) => {
        // An infrastructure failure outside any visit: the job throws right after A's commit.
        if (name === "B" && failServices) throw new Error("connection to the host agent lost");
        return { step: name };
      },
    );
    const runId = await e.start();

    // The job throws right after A's commit; graphile-worker keeps it for a retry.
    expect(await runDueJobs(e.options, runId)).toBe(1);

    const run = await loadRun(runId);
    expect(run).toMatchObject({ status: "running", currentStep: "B", stepVisit: 0 });
    expect(await visitsOf(runId)).toEqual([{ step: "A", visit: 1, outcome: "advance" }]);
    // graphile-worker records the failure a moment after runOnce returns (under load CI saw
    // the job fetched, attempts 1, and no error yet): wait for it, or the retry's run_at set
    // below could be overwritten by the late failure's backoff.
    await expect
      .poll(async () => (await pendingJobs(runId))[0], { timeout: 10_000 })
      .toMatchObject({ attempts: 1, lastError: expect.stringContaining("host agent") });
    expect(bVisits).toBe(0);

    // Its retry (due at once here) decides from the committed row: B, then C, each once.
    failServices = false;
    await testDatabase.db.execute(
      sql`update graphile_worker._private_jobs set run_at = now() where payload->>'runId' = ${runId}`,
    );
    expect(await runDueJobs(e.options, runId)).toBe(1);
    expect(bVisits).toBe(1);
    expect(await visitsOf(runId)).toEqual([
      { step: "A", visit: 1, outcome: "advance" },
      { step: "B", visit: 1, outcome: "advance" },
      { step: "C", visit: 1, outcome: "advance" },
    ]);
    expect((await loadRun(runId)).status).toBe("succeeded");
  });

  it("stops before the second step when an abort is requested during the first visit", async () => {
    const visited: string[] = [];
    const e = engine([
      step("A", async ({ runId }) => {
        visited.push("A");
        await abortRun(testDatabase.db, { runId, actor: "operator" });
        return advance();
      }),
      step("B", async () => {
        visited.push("B");
        return advance();
      }),
      step("C", async () => advance()),
    ]);
    const runId = await e.start();

    const results = await runTickJob(e.options, runId);
    expect(results).toEqual([
      { kind: "visited", step: "A", outcome: "advance", runStatus: "running" },
    ]);
    expect(visited).toEqual(["A"]);

    // The abort's wake-up is due now, as without carrying on, and ends the run at B unvisited.
    expect(await runDueJobs(e.options, runId)).toBe(1);
    expect(visited).toEqual(["A"]);
    expect(await loadRun(runId)).toMatchObject({
      status: "failed",
      failedStep: "B",
      failureReason: ABORT_REASON,
    });
  });
});
