/**
 * Issue 16: the waiting steps are woken by the worker's waiters, at a poll interval of 10
 * minutes, so nothing here could pass on the poll's own tick: an apt job's end and a rebooted
 * host reach the run before its poll tick, over the connection the waiter already holds. (How
 * soon, in seconds, is bench:template's and bench:ssh's to measure.) A worker that stops takes
 * its waiters (and their loops on the host) with it, and the next worker picks the run up at its
 * poll tick: the fallback, no second source of truth.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq } from "drizzle-orm";
import { createDb, type Database } from "@/lib/db/client";
import { runs, stepVisits } from "@/lib/db/schema";
import { definePipeline, type Pipeline, type Step } from "@/lib/pipeline/step";
import { liveGroupMembers, startImageServer, type ImageServer, type LabNode } from "@/lab";
import { PVE_KERNEL } from "@/lab/debian/catalog";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { markInstalled } from "@/lab/debian/dpkg-status";
import { writeNextKernel } from "@/lab/debian/lab-state";
import { createTestDatabase } from "@/test/db";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { createLabHost } from "@/test/lab-host";
import { runLogFileLines, settled as settledRun, startTestRun } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker } from "@/worker/runner";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { connectHost } from "./connect-host";
import { installProxmoxKernel } from "./install-proxmox-kernel";
import { installProxmoxRepository } from "./install-proxmox-repository";
import { visitRemoteJob } from "../remote-job/remote-job";
import { rebootIntoPveKernel } from "./reboot-into-pve-kernel";
import { createHostServices, type HostServices } from "./services";

/**
 * A step whose work is a remote job of the test's own: `body`, then a mark file that makes the
 * goal hold.
 */
function markedJobStep(step: string, what: string, deadlineSeconds: number, body: string) {
  const mark = `/tmp/${step}-done`;
  return {
    name: step,
    maxDuration: () => 120,
    visit: (ctx) =>
      visitRemoteJob(ctx, {
        name: step.toLowerCase(),
        step,
        what,
        deadlineSeconds,
        probe: `test -e ${mark} && echo done`,
        parse: (stdout) => stdout.trim() === "done",
        goal: (done) =>
          done ? { holds: true, detail: `${what}: done` } : { holds: false, missing: `no ${mark}` },
        body: () => ({ body: `${body}touch ${mark}\n` }),
      }),
  } satisfies Step<HostServices>;
}

const QUIET_STEP = "QuietJob";
const QUIET_WHAT = "running the quiet job";
const QUIET_LINE = "Unpacking something large (1/1)";
const quietJobStep = markedJobStep(QUIET_STEP, QUIET_WHAT, 60, `echo '${QUIET_LINE}'\nsleep 7\n`);
/** Prints nothing and outlives its 4-s deadline: the step gives up on it. */
const silentJobStep = markedJobStep("SilentJob", "running the silent job", 4, "sleep 60\n");

/** Longer than any test here: a step that moves on before it was woken by a waiter. */
const POLL_SECONDS = 600;

/** The visit came before the tick the poll before it asked for: a waiter woke the run. */
function expectWokenBeforeItsPoll(
  poll: { finishedAt: Date; outcome: string },
  next: { startedAt: Date },
) {
  expect(poll.outcome).toBe("poll");
  expect(next.startedAt.getTime()).toBeLessThan(poll.finishedAt.getTime() + POLL_SECONDS * 1000);
}

let db: Database;
let harness: StepHarness;
let image: ImageServer;
let config: OnboardingConfig;
const pipelines: Record<string, Pipeline<HostServices>> = {};

function pipeline(name: string, steps: Step<HostServices>[], own?: OnboardingConfig) {
  const p = definePipeline<HostServices>({
    name,
    steps,
    services: (run, database, resources) =>
      createHostServices(database, run, own ?? config, resources),
  });
  pipelines[name] = p;
  return p;
}

let kernel: Pipeline<HostServices>;
/** A job with a long silence, on a poll interval short enough for ticks to come during it. */
let quietJob: Pipeline<HostServices>;
let silentJob: Pipeline<HostServices>;
let repository: Pipeline<HostServices>;
let reboot: Pipeline<HostServices>;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  config = {
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    ...labProxmoxKeyring(image.keyringUrl),
    rebootDeadlineSeconds: 120,
    pollSeconds: POLL_SECONDS,
  };
  kernel = pipeline("test-waiters-kernel", [
    connectHost,
    installProxmoxRepository(config),
    installProxmoxKernel(),
  ]);
  quietJob = pipeline("test-waiters-quiet-job", [connectHost, quietJobStep], {
    ...config,
    pollSeconds: 2,
  });
  silentJob = pipeline("test-waiters-silent-job", [connectHost, silentJobStep], {
    ...config,
    pollSeconds: 2,
  });
  repository = pipeline("test-waiters-repository", [connectHost, installProxmoxRepository(config)]);
  reboot = pipeline("test-waiters-reboot", [connectHost, rebootIntoPveKernel(config)]);
  harness = await startStepHarness({ pipelines, lab: { timeScale: 0.01 } });
  db = harness.db;
}, 120_000);
afterAll(async () => {
  await harness?.stop();
  await image?.stop();
});

let counter = 0;
async function addHost(node: LabNode): Promise<string> {
  const { hostId, runId } = await createLabHost(db, node, `waiters-${++counter}`);
  await settledRun(db, runId);
  return hostId;
}

async function visitsOf(runId: string, step: string) {
  return db
    .select()
    .from(stepVisits)
    .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, step)))
    .orderBy(asc(stepVisits.id));
}

const logins = (node: LabNode) => node.authAttempts.filter((a) => a.accepted).length;
const watchLoopsOn = (node: LabNode) =>
  node.commands
    .filter((c) => c.command.includes("clupilot-watch: unchanged"))
    .filter((c) => c.exit === null || liveGroupMembers(c.pid).length > 0);

const JOB_DIR = "var/lib/clupilot/jobs/install-proxmox-kernel";

describe("waiting steps are woken by the worker's waiters (poll interval 10 min)", () => {
  it("a job over before its start took the watch baseline (a fast apt-get update) is read at once, not after the poll interval", async () => {
    const node = await harness.lab({ timeScale: 0.001 });
    const runId = await startTestRun(db, repository, await addHost(node));
    const ended = await settledRun(db, runId, 60_000);
    expect(ended.status, ended.failureReason ?? "").toBe("succeeded");
    const visits = await visitsOf(runId, "InstallProxmoxRepository");
    expect(visits.map((v) => v.outcome)).toEqual(["poll", "advance"]);
    // A watch on a baseline that already held the end would have waited out the poll interval.
    expectWokenBeforeItsPoll(visits[0]!, visits[1]!);
  }, 90_000);

  it("an apt job's end wakes the run before its poll tick; the whole chain holds one SSH login", async () => {
    const node = await harness.lab({ timeScale: 0.2 });
    const hostId = await addHost(node);
    const before = logins(node);
    const runId = await startTestRun(db, kernel, hostId);
    const ended = await settledRun(db, runId, 90_000);
    expect(ended.status, ended.failureReason ?? "").toBe("succeeded");
    const visits = await visitsOf(runId, "InstallProxmoxKernel");
    expect(visits.at(-1)!.outcome).toBe("advance");
    expectWokenBeforeItsPoll(visits.at(-2)!, visits.at(-1)!);
    // ConnectHost's first contact (it pins the key; never kept) and one kept connection after.
    expect(logins(node) - before).toBeLessThanOrEqual(2);
  }, 120_000);

  it("an apt job's output reaches the run log and its last line the phase line between visits; the run log ends with every line of it once", async () => {
    // Slow enough for apt's lines to come over several seconds on a busy machine.
    const node = await harness.lab({ timeScale: 0.5 });
    const runId = await startTestRun(db, kernel, await addHost(node));
    /** What the operator saw while the job ran, with the step's visits so far. */
    const seen: { phase: string | null; lines: number; visits: number }[] = [];
    for (;;) {
      const run = (await db.select().from(runs).where(eq(runs.id, runId)))[0]!;
      if (run.status !== "running") break;
      if (run.currentStep === "InstallProxmoxKernel") {
        const visits = await db
          .select({ id: stepVisits.id })
          .from(stepVisits)
          .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, "InstallProxmoxKernel")));
        seen.push({
          phase: run.phase,
          lines: (await runLogFileLines(db, runId, { step: "InstallProxmoxKernel" })).length,
          visits: visits.length,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const ended = await settledRun(db, runId, 30_000);
    expect(ended.status, ended.failureReason ?? "").toBe("succeeded");
    // After the visit that started the job and before the one that saw it end:
    const between = seen.filter((s) => s.visits === 1);
    // The visit that started the job showed its own words; apt's came after it, as they came
    // (which of them a sampling catches is the machine's timing).
    const phases = [...new Set(between.map((s) => s.phase))];
    expect(phases[0]).toBe("installing proxmox-default-kernel");
    expect(
      phases.some((phase) => /^(Get:\d|Unpacking |Setting up )/.test(phase ?? "")),
      `phases between visits: ${phases.join(" → ")}`,
    ).toBe(true);
    expect(Math.max(...between.map((s) => s.lines))).toBeGreaterThan(
      Math.min(...between.map((s) => s.lines)),
    );
    const host = (await readFile(path.join(node.root, JOB_DIR, "log"), "utf8")).split("\n");
    if (host.at(-1) === "") host.pop();
    expect(await runLogFileLines(db, runId, { step: "InstallProxmoxKernel" })).toEqual(host);
  }, 120_000);

  it("a poll's own tick that finds nothing new (the waiter streamed it all) keeps the job's last line on the phase line", async () => {
    const node = await harness.lab();
    const runId = await startTestRun(db, quietJob, await addHost(node));
    const ended = await settledRun(db, runId, 60_000);
    expect(ended.status, ended.failureReason ?? "").toBe("succeeded");
    const polls = (
      await db
        .select()
        .from(stepVisits)
        .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, QUIET_STEP)))
        .orderBy(asc(stepVisits.id))
    ).filter((v) => v.outcome === "poll");
    // The start, then the poll's own ticks every 2 s through the job's silence: the waiter
    // streamed its one line before the first tick, so each tick's copy finds nothing new.
    expect(polls.length, polls.map((v) => v.detail).join(" | ")).toBeGreaterThan(2);
    expect(polls[0]!.detail).toBe(QUIET_WHAT);
    expect(polls.slice(1).map((v) => v.detail)).toEqual(polls.slice(1).map(() => QUIET_LINE));
  }, 90_000);

  it("a job that printed nothing has no last output, though ticks came while it ran (the start's words are not output)", async () => {
    const node = await harness.lab();
    const runId = await startTestRun(db, silentJob, await addHost(node));
    const ended = await settledRun(db, runId, 60_000);
    expect(ended.status).toBe("failed");
    expect(ended.failureReason).toMatch(/^gave up on running the silent job after \d+ s/);
    expect(ended.failureReason).toContain("last output: none");
  }, 90_000);

  it("a rebooted host reaches the run once it answers again, before the poll tick, on the waiter's login", async () => {
    const node = await harness.lab();
    markInstalled(node.root, [
      { name: "proxmox-default-kernel", version: "2.0.0", architecture: "all" },
    ]);
    writeNextKernel(node.root, PVE_KERNEL);
    node.setDebianFaults({ rebootTakesMs: 3000 });
    const runId = await startTestRun(db, reboot, await addHost(node));
    await waitFor(
      "the host to go down",
      async () => node.power.history[0]?.downAt ?? null,
      30_000,
      20,
    );
    await node.power.waitUntilUp(30_000);
    const { downAt } = node.power.history[0]!;
    const ended = await settledRun(db, runId, 30_000);
    expect(ended.status, ended.failureReason ?? "").toBe("succeeded");
    const visits = await visitsOf(runId, "RebootIntoPveKernel");
    const advanced = visits.at(-1)!;
    expect(advanced.detail).toBe(`running ${PVE_KERNEL.release}`);
    expectWokenBeforeItsPoll(visits.at(-2)!, advanced);
    // The waiter's first look after the boot logged in; the visit it woke used that connection.
    expect(node.authAttempts.filter((a) => a.accepted && a.at >= downAt!)).toHaveLength(1);
  }, 120_000);

  it("a worker that stops takes its waiters and their loops with it; the next worker goes on from the poll tick", async () => {
    // A database and workers of its own: the harness's worker knows nothing of this pipeline.
    const database = await createTestDatabase();
    const handle = createDb(database.url, 4);
    const node = await harness.lab({ timeScale: 0.5 });
    const fallback = { ...config, pollSeconds: 4 };
    const own = definePipeline<HostServices>({
      name: "test-waiters-restart",
      steps: [connectHost, installProxmoxRepository(fallback), installProxmoxKernel()],
      services: (run, database, resources) =>
        createHostServices(database, run, fallback, resources),
    });
    const workerOptions = {
      connectionString: database.url,
      pipelines: { [own.name]: own },
      concurrency: 2,
      pollIntervalMs: 100,
      periodicChecks: false,
      log: () => {},
    };
    const first = await startWorker(workerOptions);
    const { hostId, runId: onboard } = await createLabHost(handle.db, node, "waiters-restart");
    await settledRun(handle.db, onboard);
    const runId = await startTestRun(handle.db, own, hostId);
    await waitFor(
      "the kernel job to be watched",
      async () => {
        // apt-get update before it is a watched job too.
        const [row] = await handle.db.select().from(runs).where(eq(runs.id, runId));
        return row?.currentStep === "InstallProxmoxKernel" &&
          first.waits.watching().includes(runId) &&
          watchLoopsOn(node).length > 0
          ? true
          : null;
      },
      90_000,
      50,
    );
    await first.stop();
    expect(first.waits.watching()).toEqual([]);
    await waitFor("no watch loop on the host", async () => watchLoopsOn(node).length === 0, 5000);
    const [waiting] = await handle.db.select().from(runs).where(eq(runs.id, runId));
    expect(waiting).toMatchObject({ status: "running", currentStep: "InstallProxmoxKernel" });

    const second = await startWorker(workerOptions);
    try {
      const ended = await settledRun(handle.db, runId, 90_000);
      expect(ended.status, ended.failureReason ?? "").toBe("succeeded");
      // Its first visit was the poll's own tick, not earlier: nobody watched in between.
      const visits = await handle.db
        .select()
        .from(stepVisits)
        .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, "InstallProxmoxKernel")))
        .orderBy(asc(stepVisits.id));
      const resumed = visits.find((v) => v.startedAt > waiting!.updatedAt)!;
      expect(resumed.startedAt.getTime()).toBeGreaterThanOrEqual(
        waiting!.nextTickAt!.getTime() - 50,
      );
    } finally {
      await second.stop();
      await handle.pool.end();
      await database.drop();
    }
  }, 180_000);
});
