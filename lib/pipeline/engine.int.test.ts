import { describe, expect, it } from "vitest";
import { asc, eq, sql } from "drizzle-orm";
import { events, runs, stepVisits } from "@/lib/db/schema";
import { abortRun } from "@/lib/runs/abort-run";
import { retryRun } from "@/lib/runs/retry-run";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { ABORT_REASON, tickRun, type EngineOptions } from "./engine";
import { advance, definePipeline, fail, poll, type Step } from "./step";

const testDatabase = registerTestDatabase(5);

type Services = { calls: string[] };
const noServices = () => ({ services: { calls: [] as string[] }, dispose: async () => {} });

function step(
  name: string,
  visit: Step<Services>["visit"],
  extra: Partial<Step<Services>> = {},
): Step<Services> {
  return { name, maxDuration: () => 60, visit, ...extra };
}

function engine(pipelineSteps: Step<Services>[], overrides: Partial<EngineOptions> = {}) {
  const pipeline = definePipeline<Services>({
    name: `p-${Math.random()}`,
    steps: pipelineSteps,
    services: noServices,
  });
  const options: EngineOptions = {
    db: testDatabase.db,
    pipelines: { [pipeline.name]: pipeline },
    backoffSeconds: () => 1,
    ...overrides,
  };
  return {
    options,
    start: (context?: Record<string, unknown>) =>
      testDatabase.db.transaction((tx) =>
        startRun(tx, { pipeline, hostId: null, actor: "test", context }),
      ),
    tick: (runId: string) => tickRun(options, runId),
  };
}

async function loadRun(runId: string) {
  const [run] = await testDatabase.db.select().from(runs).where(eq(runs.id, runId));
  return run!;
}

async function pendingJob(runId: string) {
  const result = await testDatabase.db.execute<{ run_at: string; attempts: number }>(
    sql`select run_at, attempts from graphile_worker._private_jobs where key = ${`run:${runId}`}`,
  );
  const row = result.rows[0];
  return row && { run_at: new Date(row.run_at), attempts: row.attempts };
}

describe("the step engine", () => {
  it("advances through every step and ends the run succeeded", async () => {
    const e = engine([
      step("A", async () => advance()),
      step("B", async () => advance("all good")),
    ]);
    const runId = await e.start();
    expect(await e.tick(runId)).toMatchObject({
      step: "A",
      outcome: "advance",
      runStatus: "running",
    });
    expect((await loadRun(runId)).currentStep).toBe("B");
    expect(await e.tick(runId)).toMatchObject({
      step: "B",
      outcome: "advance",
      runStatus: "succeeded",
    });
    const run = await loadRun(runId);
    expect(run.status).toBe("succeeded");
    expect(run.finishedAt).not.toBeNull();
    const visits = await testDatabase.db
      .select()
      .from(stepVisits)
      .where(eq(stepVisits.runId, runId))
      .orderBy(asc(stepVisits.id));
    expect(visits.map((v) => [v.step, v.visit, v.outcome, v.detail])).toEqual([
      ["A", 1, "advance", null],
      ["B", 1, "advance", "all good"],
    ]);
    expect(await e.tick(runId)).toEqual({ kind: "skipped", reason: "run is succeeded" });
  });

  it("schedules the next tick of a poll at its delay and shows its phase", async () => {
    const e = engine([step("Wait", async () => poll(120, "waiting for the host"))]);
    const runId = await e.start();
    const before = Date.now();
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.phase).toBe("waiting for the host");
    expect(run.stepVisit).toBe(1);
    const job = await pendingJob(runId);
    expect(job!.run_at.getTime()).toBeGreaterThanOrEqual(before + 119_000);
    expect(job!.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 121_000);
  });

  it("persists context written by a visit and counts visits within the chain", async () => {
    const seen: number[] = [];
    const e = engine([
      step("Count", async (ctx) => {
        seen.push(ctx.visit);
        const n = (ctx.context.get<number>("n") ?? 0) + 1;
        ctx.context.set("n", n);
        return n < 3 ? poll(0) : advance();
      }),
    ]);
    const runId = await e.start();
    for (let i = 0; i < 3; i++) await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.context).toEqual({ n: 3 });
    expect(run.contextVersion).toBe(3);
    expect(seen).toEqual([1, 2, 3]);
    expect(run.status).toBe("succeeded");
  });

  it("fails the run with the step's one-line reason and records the failed step", async () => {
    const e = engine([step("Check", async () => fail("found Debian 12 (bookworm)"))]);
    const runId = await e.start();
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run).toMatchObject({
      status: "failed",
      failureReason: "found Debian 12 (bookworm)",
      failedStep: "Check",
      nextTickAt: null,
    });
  });

  it("treats a thrown error as transient: re-visits with backoff, then fails with its message", async () => {
    let attempts = 0;
    const e = engine(
      [
        step("Flaky", async (ctx) => {
          attempts++;
          ctx.context.set("half-written", true);
          throw new Error("connection reset by peer\nstack noise");
        }),
      ],
      { maxTransientErrors: 3, backoffSeconds: (n) => n * 10 },
    );
    const runId = await e.start();
    const t0 = Date.now();
    await e.tick(runId);
    let run = await loadRun(runId);
    expect(run).toMatchObject({ status: "running", errorCount: 1 });
    expect(run.context).toEqual({}); // a thrown visit writes nothing
    expect((await pendingJob(runId))!.run_at.getTime()).toBeGreaterThanOrEqual(t0 + 9_000);
    await e.tick(runId);
    expect((await loadRun(runId)).errorCount).toBe(2);
    await e.tick(runId);
    run = await loadRun(runId);
    expect(attempts).toBe(3);
    expect(run).toMatchObject({
      status: "failed",
      failureReason: "connection reset by peer",
      failedStep: "Flaky",
    });
    const outcomes = await testDatabase.db
      .select({ o: stepVisits.outcome })
      .from(stepVisits)
      .where(eq(stepVisits.runId, runId));
    expect(outcomes.map((o) => o.o)).toEqual(["error", "error", "error"]);
  });

  it("a regular outcome resets the transient error count", async () => {
    let n = 0;
    const e = engine(
      [
        step("Sometimes", async () => {
          n++;
          if (n % 2 === 1) throw new Error("blip");
          return n >= 6 ? advance() : poll(0);
        }),
      ],
      { maxTransientErrors: 2 },
    );
    const runId = await e.start();
    for (let i = 0; i < 6; i++) await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("succeeded");
  });

  it("enforces maxDuration on a visit chain: the waits the step asked for count", async () => {
    const e = engine([
      step("Slow", async () => poll(1.2, "still going"), { maxDuration: () => 1 }),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("running");
    // Ticked when due (not later): the chain was active all along.
    await new Promise((resolve) => setTimeout(resolve, 1250));
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toMatch(
      /^Slow did not finish within its maximum duration of 1 s \(ran 1 s\)$/,
    );
  });

  it("does not count against maxDuration the time a run sat overdue (nothing could tick it); a new step starts with none", async () => {
    let visits = 0;
    const e = engine([
      step(
        "Plan",
        async () => {
          visits++;
          return visits < 3 ? poll(0, "planning") : advance();
        },
        { maxDuration: () => 1 },
      ),
      step("Call", async () => advance()),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    // The tick was due at once; the database or every worker was away for 1.5 s.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await e.tick(runId)).toMatchObject({ step: "Plan", outcome: "poll" });
    const paused = (await loadRun(runId)).stepPausedSeconds;
    expect(paused).toBeGreaterThanOrEqual(1.5);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await e.tick(runId)).toMatchObject({ step: "Plan", outcome: "advance" });
    const run = await loadRun(runId);
    expect(run).toMatchObject({ currentStep: "Call", stepPausedSeconds: 0 });
    expect(await e.tick(runId)).toMatchObject({ runStatus: "succeeded" });
  });

  it("still fails a step that runs too long after the console was away, naming the time not counted", async () => {
    // Each poll waits 1 s, all of it counted: 1 s active at the second tick, 2 s at the third;
    // a maximum of 1.5 s sits half a second from both, whatever a busy machine adds.
    const e = engine([
      step("Slow", async () => poll(1, "still going"), { maxDuration: () => 1.5 }),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // due after 1 s: 1.5 s overdue
    await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("running");
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toMatch(
      /^Slow did not finish within its maximum duration of 1.5 s \(ran \d+ s; not counted: \d+ s while the console could not tick it\)$/,
    );
  });

  it("enforces maxDuration on a visit that hangs, and aborts its signal", async () => {
    let aborted = false;
    const e = engine([
      step(
        "Hang",
        (ctx) =>
          new Promise(() => {
            ctx.signal.addEventListener("abort", () => (aborted = true));
          }),
        { maxDuration: () => 0.5 },
      ),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toMatch(/maximum duration of 0.5 s/);
    expect(aborted).toBe(true);
  });

  it("retry re-enters the failed step as a first visit", async () => {
    let healthy = false;
    const visits: number[] = [];
    const e = engine([
      step("A", async () => advance()),
      step("B", async (ctx) => {
        visits.push(ctx.visit);
        if (!healthy) return ctx.visit < 2 ? poll(0) : fail("not yet");
        return advance();
      }),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    await e.tick(runId);
    await e.tick(runId);
    expect(await loadRun(runId)).toMatchObject({ status: "failed", failedStep: "B" });
    healthy = true;
    await retryRun(testDatabase.db, { runId, actor: "alice" });
    const retried = await loadRun(runId);
    expect(retried).toMatchObject({
      status: "running",
      currentStep: "B",
      stepVisit: 0,
      failureReason: null,
    });
    expect(await pendingJob(runId)).toBeDefined();
    await e.tick(runId);
    expect(visits).toEqual([1, 2, 1]);
    expect((await loadRun(runId)).status).toBe("succeeded");
    const kinds = await testDatabase.db
      .select({ k: events.kind, a: events.actor })
      .from(events)
      .where(eq(events.runId, runId));
    expect(kinds).toContainEqual({ k: "run.retried", a: "alice" });
    await expect(retryRun(testDatabase.db, { runId, actor: "alice" })).rejects.toThrow(
      /Only a failed run can be retried/,
    );
  });

  it("abort wakes a polling run at once, lets the step clean up, and fails it as aborted by operator", async () => {
    const cleaned: string[] = [];
    const e = engine([
      step("Build", async () => poll(3600, "customise image"), {
        abort: async (ctx) => void cleaned.push(ctx.runId),
      }),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    expect((await pendingJob(runId))!.run_at.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
    await abortRun(testDatabase.db, { runId, actor: "bob" });
    expect((await pendingJob(runId))!.run_at.getTime()).toBeLessThanOrEqual(Date.now());
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run).toMatchObject({
      status: "failed",
      failureReason: ABORT_REASON,
      failedStep: "Build",
    });
    expect(cleaned).toEqual([runId]);
    const kinds = await testDatabase.db
      .select({ k: events.kind })
      .from(events)
      .where(eq(events.runId, runId));
    expect(kinds.map((k) => k.k)).toEqual(
      expect.arrayContaining(["run.abort_requested", "run.aborted"]),
    );
    await expect(abortRun(testDatabase.db, { runId, actor: "bob" })).rejects.toThrow(
      /Only a running run can be aborted/,
    );
  });

  it("an abort recorded while a visit runs wakes the run at once instead of after the poll", async () => {
    let release!: () => void;
    const inVisit = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const visiting = new Promise<void>((resolve) => (entered = resolve));
    const e = engine([
      step("Build", async () => {
        entered();
        await inVisit;
        return poll(3600, "customise image");
      }),
    ]);
    const runId = await e.start();
    const tick = e.tick(runId);
    await visiting;
    await abortRun(testDatabase.db, { runId, actor: "carol" }); // must not wait for the visit
    release();
    await tick;
    expect((await pendingJob(runId))!.run_at.getTime()).toBeLessThanOrEqual(Date.now());
    await e.tick(runId);
    expect((await loadRun(runId)).failureReason).toBe(ABORT_REASON);
  });

  it("a step unknown to this version fails the run instead of looping", async () => {
    const e = engine([step("A", async () => advance())]);
    const runId = await e.start();
    await testDatabase.db.update(runs).set({ currentStep: "Removed" }).where(eq(runs.id, runId));
    await e.tick(runId);
    expect((await loadRun(runId)).failureReason).toMatch(/step Removed is not part of pipeline/);
  });
});
