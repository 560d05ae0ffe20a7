import { asc, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { events } from "@/lib/db/schema";
import { tickRun, type EngineOptions } from "@/lib/pipeline/engine";
import { advance, definePipeline, fail, poll, type Step } from "@/lib/pipeline/step";
import { readLogTail } from "@/lib/logs/read";
import { registerTestDatabase } from "@/test/db";
import { abortRun } from "./abort-run";
import { getRun } from "./get-run";
import { retryRun } from "./retry-run";
import { startRun } from "./start-run";

const testDatabase = registerTestDatabase(5);

type Services = Record<string, never>;

function engine(steps: Step<Services>[], now?: () => Date) {
  const pipeline = definePipeline<Services>({
    name: `story-${Math.random()}`,
    steps,
    services: () => ({ services: {}, dispose: async () => {} }),
  });
  const options: EngineOptions = {
    db: testDatabase.db,
    pipelines: { [pipeline.name]: pipeline },
    backoffSeconds: () => 1,
    now,
  };
  return {
    start: () =>
      testDatabase.db.transaction((tx) => startRun(tx, { pipeline, hostId: null, actor: "test" })),
    tick: (runId: string) => tickRun(options, runId),
    detail: async (runId: string) => (await getRun(testDatabase.db, runId, options.pipelines))!,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("what a run's page reads from its rows", () => {
  it("a step retried after a failure and then done shows both attempts, the Retry by whom, and its own duration; the log has a section per attempt", async () => {
    // The engine's clock: the first attempt an hour before the operator's Retry (which is
    // recorded at the real time), each visit of Configure taking 30 ms of it.
    let clock = Date.now() - 60 * 60_000;
    let failNext = true;
    const e = engine(
      [
        { name: "A", maxDuration: () => 60, visit: async () => advance() },
        {
          name: "Configure",
          maxDuration: () => 60,
          visit: async () => {
            clock += 30;
            return failNext ? fail("bridge refused") : advance("vmbr0 up");
          },
        },
      ],
      () => new Date(clock),
    );
    const runId = await e.start();
    await e.tick(runId);
    await e.tick(runId);
    // The run sits failed for an hour before the operator retries: that wait is no attempt's.
    failNext = false;
    await retryRun(testDatabase.db, { runId, actor: "alice" });
    clock = Date.now();
    await e.tick(runId);

    const run = await e.detail(runId);
    expect(run.status).toBe("succeeded");
    const step = run.timeline.find((s) => s.name === "Configure")!;
    expect(step.state).toBe("done");
    expect(step.attempts.map((a) => a.state)).toEqual(["failed", "done"]);
    expect(step.attempts[0]!.retry).toBeNull();
    expect(step.attempts[1]!.retry).toMatchObject({ by: "alice" });
    expect(step.attempts.map((a) => a.durationSeconds)).toEqual([0.03, 0.03]);
    expect(step.durationSeconds).toBe(0.03);
    expect(run.timeline.find((s) => s.name === "A")!.attempts).toHaveLength(1);

    // Log sections are runs of one step's lines: failed attempt, the Retry line, the next attempt.
    const steps = (await readLogTail(testDatabase.db, runId, 100)).map((l) => l.step);
    const sections = steps.filter((s, i) => s !== steps[i - 1]);
    expect(sections).toEqual(["Configure", "Retry by alice", "Configure"]);
  });

  it("an aborted run's step reads aborted, not failed", async () => {
    const e = engine([
      { name: "Build", maxDuration: () => 60, visit: async () => poll(3600, "customise image") },
    ]);
    const runId = await e.start();
    await e.tick(runId);
    await abortRun(testDatabase.db, { runId, actor: "bob" });
    await e.tick(runId);
    const run = await e.detail(runId);
    expect(run.timeline[0]).toMatchObject({ state: "aborted", failureReason: null });
  });

  it("events are in commit order and their times agree: an abort committed during a visit is listed before what the visit recorded, and is not later in time", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const visiting = new Promise<void>((resolve) => (entered = resolve));
    const e = engine([
      {
        name: "Configure",
        maxDuration: () => 60,
        visit: async () => {
          entered();
          await held;
          return advance("done");
        },
      },
      { name: "Token", maxDuration: () => 60, visit: async () => poll(3600) },
    ]);
    const runId = await e.start();
    const tick = e.tick(runId);
    await visiting;
    await sleep(50);
    await abortRun(testDatabase.db, { runId, actor: "carol" });
    await sleep(50);
    release();
    await tick;
    await e.tick(runId);

    const rows = await testDatabase.db
      .select()
      .from(events)
      .where(eq(events.runId, runId))
      .orderBy(asc(events.id));
    const kinds = rows.map((r) => r.kind);
    expect(kinds.indexOf("run.abort_requested")).toBeGreaterThan(-1);
    const times = rows.map((r) => r.at.getTime());
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const detail = await e.detail(runId);
    expect(detail.events.map((ev) => ev.id)).toEqual(rows.map((r) => r.id));
  });
});
