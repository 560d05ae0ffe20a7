import { asc, eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { powerShutdownCalls, runs, upsMonitorState } from "@/lib/db/schema";
import { abortRun } from "@/lib/runs/abort-run";
import { listPowerTargets } from "@/lib/power/operations/power-targets";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { definePipeline } from "@/lib/pipeline/step";
import { POWER_SHUTDOWN, powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import { planShutdown } from "@/lib/power/shutdown-pipeline/plan-shutdown";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import {
  addUps,
  ADMIN,
  nutSourceOf,
  onboardedLabNode,
  powerTestPipelines,
  protectHost,
} from "@/test/fixtures/power";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * Found by the 30-minute soak with power (seed 134): an armed outage got no shutdown call. Its
 * run sat at PlanShutdown while PostgreSQL was killed twice and the worker once; when the console
 * could tick it again, 68 s had passed since the step began and the engine failed it for its
 * 60-s maximum duration — and the monitor, seeing a run for the outage, started none. Here the
 * worker and then PostgreSQL are away for longer than PlanShutdown's maximum duration while the
 * run waits at PlanShutdown; and a run the console lost is replaced while the trigger holds.
 */

/**
 * The product's shutdown pipeline with one change, handed to the worker the way every test hands
 * its worker the pipelines it runs: PlanShutdown may last 10 s instead of 60 s, so the first test
 * outlasts it as the soak's 68 s outlasted the 60 s without waiting a minute out.
 */
const PLAN_SHUTDOWN_MAX_SECONDS = 10;
const boundedPlanShutdown = { ...planShutdown, maxDuration: () => PLAN_SHUTDOWN_MAX_SECONDS };
const pipelines = {
  ...powerTestPipelines,
  [POWER_SHUTDOWN]: definePipeline({
    ...powerShutdownPipeline,
    steps: powerShutdownPipeline.steps.map((step) =>
      step === planShutdown ? boundedPlanShutdown : step,
    ),
  }),
};

let postgres: RestartablePostgres;
let handle: ReturnType<typeof createDb>;
let db: Database;
let worker: WorkerHandle | null = null;
let monitor: PowerMonitor;
let ups: LabUps;
let upsId: string;
let node: LabNode;
const monitorLog: string[] = [];

const startTestWorker = () =>
  startWorker({
    connectionString: postgres.url,
    pipelines,
    concurrency: 2,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
  });

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  handle = createDb(postgres.url, 2, trackReachability({ log: () => {}, meanwhile: "" }));
  db = handle.db;
  worker = await startTestWorker();
  ups = await startLabUps({ name: "rack-a", snmp: false });
  upsId = await addUps(db, "rack-a", nutSourceOf(ups));
  const onboarded = await onboardedLabNode(db, "pve-outage");
  node = onboarded.node;
  await protectHost(db, onboarded.hostId, { feeds: [upsId] });
  await updatePowerSettings(
    db,
    {
      triggers: { onBatteryForSeconds: 600, latchReleaseAfterStableMainsSeconds: 1 },
      shutdown: { callTimeoutSeconds: 3, targetDownSeconds: 20 },
    },
    ADMIN,
  );
  const ids = (await listPowerTargets(db)).map((t) => t.id);
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: ids }, ADMIN);
  monitor = await startPowerMonitor({
    connectionString: postgres.url,
    supervisorIntervalMs: 500,
    log: (line) => monitorLog.push(line),
  });
  await waitFor(
    "a reading on mains",
    async () => (await stateRow())?.lastReading?.onBattery === false,
  );
}, 180_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await Promise.all([ups?.stop(), node?.stop()]);
  await handle?.pool.end();
  await postgres?.close();
});

const stateRow = async () =>
  (await db.select().from(upsMonitorState).where(eq(upsMonitorState.upsId, upsId)))[0];
const powerRuns = () =>
  db.select().from(runs).where(eq(runs.pipeline, POWER_SHUTDOWN)).orderBy(asc(runs.createdAt));
/** The node's API requests from this outage on (endOutage moves the mark). */
let requestsSeen = 0;
const posts = () => node.api.requests.slice(requestsSeen).filter((r) => r.method === "POST");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Mains back until the latch lets go, the node powered on again: ready for the next outage. */
async function endOutage(): Promise<void> {
  ups.control.restore();
  await waitFor("the latch released", async () => (await stateRow())?.latchedAt === null, 30_000);
  await node.power.powerOn();
  requestsSeen = node.api.requests.length;
}

/** The worker away, the UPS at low battery: the monitor's run waits at PlanShutdown. */
async function outageWithoutWorker(runsBefore: number) {
  await worker?.stop();
  worker = null;
  ups.control.jumpToLowBattery();
  return waitFor(
    "the monitor's run for the outage",
    async () => (await powerRuns())[runsBefore],
    30_000,
  );
}

describe("a shutdown through the console's own outage", () => {
  afterEach(endOutage, 60_000);

  it("armed: the worker and then PostgreSQL away longer than PlanShutdown's maximum duration while the run waits at PlanShutdown — the run goes on when they are back and the node gets exactly one shutdown call", async () => {
    const run = await outageWithoutWorker(0);
    expect(run).toMatchObject({ status: "running", currentStep: planShutdown.name });
    expect(monitorLog.filter((l) => l.includes("power-shutdown run"))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^UPS rack-a: power-shutdown run ${run.id} started for 1 target\\(s\\) of the trigger latched at \\S+$`,
        ),
      ),
    ]);

    await postgres.stop("kill");
    await sleep((boundedPlanShutdown.maxDuration() + 5) * 1000);
    await postgres.start();
    worker = await startTestWorker();

    const ended = await settled(db, run.id, 120_000);
    expect(ended.failureReason).toBeNull();
    expect(ended.status).toBe("succeeded");
    await sleep(2000); // the monitor keeps reading on battery: nothing more may start or go out
    expect(posts()).toHaveLength(1);
    // While PostgreSQL was gone the run could not act, so the monitor shut the node down from
    // the plan in memory and recorded that as a run of its own once the database was back; the
    // waiting run then found the node's call accepted and watched it down.
    const all = await powerRuns();
    expect(all).toHaveLength(2);
    const offline = all.find((r) => r.id !== run.id)!;
    expect(offline.context.offline).toBeDefined();
    const calls = await db.select().from(powerShutdownCalls);
    const rows = JSON.stringify(calls.map((c) => [c.runId === offline.id, c.state, c.detail]));
    // The one POST is the monitor's, recorded under its run: accepted — or, on a machine so
    // busy that the node answered after the 3-s call timeout, failed (the node went down all
    // the same, and a target seen down is not called again).
    expect(calls.filter((c) => c.runId === offline.id).length, rows).toBeGreaterThan(0);
    expect(
      calls.filter((c) => c.state === "sent").every((c) => c.runId === offline.id),
      rows,
    ).toBe(true);
    expect(calls.filter((c) => c.state === "sent").length, rows).toBeLessThanOrEqual(1);
    // Had the waiting run asked before the monitor's record was written, its call found the
    // node already down (refused): recorded as failed, never as a second accepted one.
    expect(
      calls.filter((c) => c.state !== "sent").every((c) => c.state === "failed"),
      rows,
    ).toBe(true);
    expect(node.power.state).toBe("down");
  }, 240_000);

  it("armed: a run the console lost (failed, not by the operator) is replaced while the trigger holds; the replacement calls the node (once, or again only after a failed attempt), and a called target is never called again", async () => {
    const before = (await powerRuns()).length;
    const lost = await outageWithoutWorker(before);
    // The state seed 134 left behind: the run failed by the engine, not by anyone's choice.
    await db
      .update(runs)
      .set({
        status: "failed",
        failureReason: `${planShutdown.name} did not finish within its maximum duration of 60 s (ran 68 s)`,
        failedStep: planShutdown.name,
        finishedAt: new Date(),
        nextTickAt: null,
      })
      .where(eq(runs.id, lost.id));
    worker = await startTestWorker();

    const replacement = await waitFor(
      "a replacement run",
      async () => (await powerRuns())[before + 1],
      30_000,
    );
    expect(replacement.context.input).toMatchObject({ replaces: [lost.id] });
    // The monitor's log says which run is a replacement, and of which.
    expect(monitorLog).toContainEqual(
      `UPS rack-a: power-shutdown run ${replacement.id} started for 1 target(s) of the trigger latched at ${(await stateRow())!.latchedAt!.toISOString()}, replacing lost run(s) ${lost.id}`,
    );
    expect((await settled(db, replacement.id, 60_000)).status).toBe("succeeded");
    await waitUntil(() => posts().length >= 1, { timeoutMs: 15_000, what: "the node's call" });
    // One POST per attempt of the replacement's: one, unless the node answered after the 3-s
    // call timeout on a busy machine — then that attempt is failed and sent again (never a
    // second accepted call).
    const attempts = await db
      .select()
      .from(powerShutdownCalls)
      .where(eq(powerShutdownCalls.runId, replacement.id));
    const rows = JSON.stringify(attempts.map((c) => [c.attempt, c.state, c.detail]));
    // (An attempt sent once the node was already down is refused, never heard.)
    expect(posts().length, rows).toBeLessThanOrEqual(attempts.length);
    expect(attempts.filter((c) => c.state === "sent").length, rows).toBeLessThanOrEqual(1);
    expect(
      attempts.every((c) => c.state === "sent" || c.state === "failed"),
      rows,
    ).toBe(true);
    const called = posts().length;

    // The replacement failing after its call (by the engine, say) starts nothing more: the
    // target was called for this outage.
    await db
      .update(runs)
      .set({ status: "failed", failureReason: "VerifyTargetsDown: lost", finishedAt: new Date() })
      .where(eq(runs.id, replacement.id));
    await sleep(3000);
    expect(await powerRuns()).toHaveLength(before + 2);
    expect(posts()).toHaveLength(called);
  }, 180_000);

  it("armed: a run the operator aborted is not replaced, and nothing is sent", async () => {
    const before = (await powerRuns()).length;
    const run = await outageWithoutWorker(before);
    await abortRun(db, { runId: run.id, actor: "test-operator" });
    worker = await startTestWorker();
    const ended = await settled(db, run.id, 60_000);
    expect(ended.status).toBe("failed");
    await sleep(3000);
    expect(await powerRuns()).toHaveLength(before + 1);
    expect(posts()).toEqual([]);
    expect(
      await db.select().from(powerShutdownCalls).where(eq(powerShutdownCalls.runId, run.id)),
    ).toEqual([]);
  }, 120_000);
});
