/**
 * `Step.cleanup`: the engine tells a step that the run failed while it was current, whatever
 * the reason but an abort (which has `abort`) — so a step that left work running on a host
 * (BuildVmTemplate's driver) can stop it.
 */
import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { runLogChunks, runs } from "@/lib/db/schema";
import { abortRun } from "@/lib/runs/abort-run";
import { startRun } from "@/lib/runs/start-run";
import { registerTestDatabase } from "@/test/db";
import { tickRun, type EngineOptions } from "./engine";
import { advance, definePipeline, fail, poll, type Step, type StepContext } from "./step";

const testDatabase = registerTestDatabase(5);

type Services = { label: string };

/** A step whose clean-ups are recorded with what they saw (context, signal). */
function recorded(
  visit: Step<Services>["visit"],
  maxDuration = 60,
): { step: Step<Services>; cleanups: { context: unknown; signalAborted: boolean }[] } {
  const cleanups: { context: unknown; signalAborted: boolean }[] = [];
  return {
    cleanups,
    step: {
      name: "Build",
      maxDuration: () => maxDuration,
      visit,
      async abort() {},
      async cleanup(ctx: StepContext<Services>) {
        cleanups.push({ context: ctx.context.get("started"), signalAborted: ctx.signal.aborted });
        ctx.context.delete("started");
      },
    },
  };
}

function engine(step: Step<Services>, overrides: Partial<EngineOptions> = {}) {
  const pipeline = definePipeline<Services>({
    name: `cleanup-${Math.random()}`,
    steps: [step],
    services: () => ({ services: { label: "x" }, dispose: async () => {} }),
  });
  const options: EngineOptions = {
    db: testDatabase.db,
    pipelines: { [pipeline.name]: pipeline },
    backoffSeconds: () => 0,
    ...overrides,
  };
  return {
    start: () =>
      testDatabase.db.transaction((tx) => startRun(tx, { pipeline, hostId: null, actor: "test" })),
    tick: (runId: string) => tickRun(options, runId),
  };
}

async function loadRun(runId: string) {
  const [run] = await testDatabase.db.select().from(runs).where(eq(runs.id, runId));
  return run!;
}

describe("Step.cleanup", () => {
  it("maxDuration cuts a visit off → cleanup runs with the visit's context and a live signal; what it clears is persisted", async () => {
    const { step, cleanups } = recorded(async (ctx) => {
      ctx.context.set("started", "build 1");
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return poll(0);
    }, 0.3);
    const e = engine(step);
    const runId = await e.start();
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toMatch(/^Build did not finish within its maximum duration/);
    expect(cleanups).toEqual([{ context: "build 1", signalAborted: false }]);
    expect(run.context).not.toHaveProperty("started");
  });

  it("attempts used up → cleanup runs; the step's own fail → cleanup runs too (it must be idempotent)", async () => {
    const thrower = recorded(async () => {
      throw new Error("host unreachable");
    });
    const e = engine(thrower.step, { maxTransientErrors: 2 });
    const runId = await e.start();
    await e.tick(runId);
    expect(thrower.cleanups).toEqual([]);
    await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("failed");
    expect(thrower.cleanups).toHaveLength(1);

    const failing = recorded(async () => fail("checksum mismatch"));
    const f = engine(failing.step);
    await f.tick(await f.start());
    expect(failing.cleanups).toHaveLength(1);
  });

  it("an abort, an advance and a poll → no cleanup", async () => {
    const polling = recorded(async () => poll(0));
    const e = engine(polling.step);
    const runId = await e.start();
    await e.tick(runId);
    await abortRun(testDatabase.db, { runId, actor: "test" });
    await e.tick(runId);
    expect((await loadRun(runId)).status).toBe("failed");

    const done = recorded(async () => advance());
    const d = engine(done.step);
    await d.tick(await d.start());
    expect([...polling.cleanups, ...done.cleanups]).toEqual([]);
  });

  it("a cleanup that throws is logged; the run fails with the step's reason anyway", async () => {
    const step: Step<Services> = {
      name: "Build",
      maxDuration: () => 60,
      visit: async () => fail("the build failed"),
      async cleanup() {
        throw new Error("ssh refused");
      },
    };
    const e = engine(step);
    const runId = await e.start();
    await e.tick(runId);
    const run = await loadRun(runId);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toBe("the build failed");
    const log = await testDatabase.db
      .select()
      .from(runLogChunks)
      .where(eq(runLogChunks.runId, runId));
    expect(log.map((chunk) => chunk.text).join("")).toContain(
      "Build clean-up after the failure failed: ssh refused",
    );
  });
});
