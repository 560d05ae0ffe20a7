import { describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { events, runs } from "@/lib/db/schema";
import { abortRun } from "@/lib/runs/abort-run";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { runLogText } from "@/test/runs";
import { ABORT_REASON, tickRun, type EngineOptions } from "./engine";
import {
  advance,
  definePipeline,
  fail,
  poll,
  type FailedRun,
  type Pipeline,
  type RunFailure,
  type Step,
} from "./step";

/**
 * A pipeline's `onFailed` hears of every end of its runs that is not a success — the step's own
 * fail, thrown visits that used up their attempts, maxDuration, the operator's abort, a step
 * this version does not know — once, in the transaction that records the failure.
 */

const testDatabase = registerTestDatabase(4);

type Heard = { run: FailedRun; failure: RunFailure };

function step(
  name: string,
  visit: Step<object>["visit"],
  extra: Partial<Step<object>> = {},
): Step<object> {
  return { name, maxDuration: () => 60, visit, ...extra };
}

function engine(
  steps: Step<object>[],
  onFailed?: Pipeline<object>["onFailed"],
  overrides: Partial<EngineOptions> = {},
) {
  const heard: Heard[] = [];
  const pipeline = definePipeline<object>({
    name: `p-${Math.random()}`,
    steps,
    services: () => ({ services: {}, dispose: async () => {} }),
    onFailed:
      onFailed ??
      (async (tx, run, failure) => {
        heard.push({ run, failure });
        // Written in the failure's own transaction: it commits with it.
        await tx.insert(events).values({
          runId: run.id,
          kind: "test.on_failed",
          actor: "test",
          message: `${failure.cause}: ${failure.reason}`,
        });
      }),
  });
  const options: EngineOptions = {
    db: testDatabase.db,
    pipelines: { [pipeline.name]: pipeline },
    backoffSeconds: () => 0,
    ...overrides,
  };
  return {
    heard,
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

const hookEvents = (runId: string) =>
  testDatabase.db
    .select({ message: events.message })
    .from(events)
    .where(and(eq(events.runId, runId), eq(events.kind, "test.on_failed")));

describe("a pipeline's onFailed", () => {
  it("hears the step's own fail, with the step, the reason and the context the visit left", async () => {
    const e = engine([
      step("Check", async (ctx) => {
        ctx.context.set("found", "bookworm");
        return fail("found Debian 12 (bookworm)");
      }),
    ]);
    const runId = await e.start({ input: 1 });
    await e.tick(runId);
    expect(e.heard).toEqual([
      {
        run: {
          id: runId,
          pipeline: expect.any(String),
          hostId: null,
          context: { input: 1, found: "bookworm" },
        },
        failure: { step: "Check", reason: "found Debian 12 (bookworm)", cause: "step" },
      },
    ]);
    expect(await hookEvents(runId)).toEqual([{ message: "step: found Debian 12 (bookworm)" }]);
  });

  it("hears a visit that threw until its attempts were used up — once, at the end, not on the retries", async () => {
    const e = engine(
      [
        step("Flaky", async () => {
          throw new Error("connection reset by peer");
        }),
      ],
      undefined,
      { maxTransientErrors: 3 },
    );
    const runId = await e.start();
    await e.tick(runId);
    await e.tick(runId);
    expect(e.heard).toEqual([]);
    await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("failed");
    expect(e.heard.map((h) => h.failure)).toEqual([
      { step: "Flaky", reason: "connection reset by peer", cause: "errors" },
    ]);
  });

  it("hears a visit cut off at its maxDuration", async () => {
    const e = engine([
      step(
        "Hang",
        (ctx) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
          ),
        {
          maxDuration: () => 0.2,
        },
      ),
    ]);
    const runId = await e.start();
    await e.tick(runId);
    expect(e.heard.map((h) => h.failure)).toEqual([
      {
        step: "Hang",
        reason: expect.stringMatching(/maximum duration of 0.2 s/),
        cause: "deadline",
      },
    ]);
  });

  it("hears a chain that outlived its maxDuration between visits", async () => {
    let clock = 0;
    const e = engine([step("Slow", async () => poll(1), { maxDuration: () => 0.5 })], undefined, {
      now: () => new Date(clock),
    });
    const runId = await e.start();
    clock = Date.now();
    await e.tick(runId);
    expect(e.heard).toEqual([]);
    // Ticked exactly when due: the second it waited counts against the chain.
    clock += 1000;
    await e.tick(runId);
    expect(e.heard.map((h) => h.failure)).toEqual([
      {
        step: "Slow",
        reason: expect.stringMatching(/maximum duration of 0.5 s/),
        cause: "deadline",
      },
    ]);
  });

  it("hears the operator's abort as its own cause", async () => {
    const e = engine([step("Build", async () => poll(3600, "customise image"))]);
    const runId = await e.start();
    await e.tick(runId);
    await abortRun(testDatabase.db, { runId, actor: "bob" });
    await e.tick(runId);
    expect(e.heard.map((h) => h.failure)).toEqual([
      { step: "Build", reason: ABORT_REASON, cause: "aborted" },
    ]);
  });

  it("hears the engine's own failure: a step this version does not know", async () => {
    const e = engine([step("A", async () => advance())]);
    const runId = await e.start();
    await testDatabase.db.update(runs).set({ currentStep: "Removed" }).where(eq(runs.id, runId));
    await e.tick(runId);
    expect(e.heard.map((h) => h.failure)).toEqual([
      {
        step: "Removed",
        reason: expect.stringMatching(/step Removed is not part of pipeline/),
        cause: "engine",
      },
    ]);
  });

  it("is not called for a run that succeeds", async () => {
    const e = engine([step("A", async () => advance())]);
    const runId = await e.start();
    await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("succeeded");
    expect(e.heard).toEqual([]);
  });

  it("a hook that throws does not keep the run from failing: what it wrote is rolled back, the run's log says so", async () => {
    const e = engine([step("Check", async () => fail("disk full"))], async (tx, run) => {
      await tx.insert(events).values({
        runId: run.id,
        kind: "test.on_failed",
        actor: "test",
        message: "half-written",
      });
      throw new Error("the notification table is missing");
    });
    const runId = await e.start();
    await e.tick(runId);
    expect(await loadRun(runId)).toMatchObject({ status: "failed", failureReason: "disk full" });
    expect(await hookEvents(runId)).toEqual([]);
    expect(await runLogText(testDatabase.db, runId)).toMatch(
      /could not report this failure: the notification table is missing/,
    );
  });
});

describe("a pipeline's onSucceeded", () => {
  function succeeding(onSucceeded: Pipeline<object>["onSucceeded"]) {
    const pipeline = definePipeline<object>({
      name: `s-${Math.random()}`,
      steps: [
        step("First", async () => advance()),
        step("Last", async (ctx) => {
          ctx.context.set("done", true);
          return advance();
        }),
      ],
      services: () => ({ services: {}, dispose: async () => {} }),
      onSucceeded,
    });
    const options: EngineOptions = {
      db: testDatabase.db,
      pipelines: { [pipeline.name]: pipeline },
      carryOn: false,
    };
    return {
      start: () =>
        testDatabase.db.transaction((tx) =>
          startRun(tx, { pipeline, hostId: null, actor: "test" }),
        ),
      tick: (runId: string) => tickRun(options, runId),
    };
  }

  it("is called once, when the last step advances, in the transaction that records the success", async () => {
    const heard: unknown[] = [];
    const p = succeeding(async (tx, run) => {
      heard.push(run.context);
      await tx
        .insert(events)
        .values({ runId: run.id, kind: "test.on_succeeded", actor: "test", message: "heard" });
    });
    const runId = await p.start();
    await p.tick(runId);
    expect(heard).toEqual([]);
    await p.tick(runId);
    expect(heard).toEqual([{ done: true }]);
    expect((await loadRun(runId)).status).toBe("succeeded");
    const written = await testDatabase.db
      .select({ message: events.message })
      .from(events)
      .where(and(eq(events.runId, runId), eq(events.kind, "test.on_succeeded")));
    expect(written).toEqual([{ message: "heard" }]);
  });

  it("that throws costs what it wrote, never the success: the run's log says it could not report", async () => {
    const p = succeeding(async (tx, run) => {
      await tx
        .insert(events)
        .values({ runId: run.id, kind: "test.on_succeeded", actor: "test", message: "lost" });
      throw new Error("queue unavailable");
    });
    const runId = await p.start();
    await p.tick(runId);
    await p.tick(runId);
    expect((await loadRun(runId)).status).toBe("succeeded");
    expect(await runLogText(testDatabase.db, runId)).toContain(
      "could not report this success: queue unavailable",
    );
    const written = await testDatabase.db
      .select()
      .from(events)
      .where(and(eq(events.runId, runId), eq(events.kind, "test.on_succeeded")));
    expect(written).toEqual([]);
  });
});
