/**
 * Issue 16: abort is a signal. An abort during each step that waits for remote work — the apt
 * jobs, the reboot, the template build — ends the run, takes the remote process group down
 * (the step's abort finds it alive and stops it) and leaves no waiter behind, in the worker or
 * on the host. When a visit is in flight at that moment, its signal fires (the worker hears the
 * abort on its LISTEN) and the step's abort runs in that same tick. The poll interval is 10
 * minutes, longer than any wait here: nothing but the abort's own wake-up can end these runs.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { readLogTail } from "@/lib/logs/read";
import { ABORT_REASON } from "@/lib/pipeline/engine";
import { scheduleTick } from "@/lib/pipeline/schedule";
import { advance, definePipeline, type Pipeline, type Step } from "@/lib/pipeline/step";
import { abortRun } from "@/lib/runs/abort-run";
import type { SshSession } from "@/lib/ssh";
import {
  isProcessAlive,
  liveGroupMembers,
  startImageServer,
  type ImageServer,
  type LabNode,
} from "@/lab";
import { PVE_KERNEL } from "@/lab/debian/catalog";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { markInstalled } from "@/lab/debian/dpkg-status";
import { writeNextKernel } from "@/lab/debian/lab-state";
import { insertOnboardedHost, setCatalog } from "@/test/fixtures/build-vm-template";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { createLabHost } from "@/test/lab-host";
import { settled as settledRun, startTestRun } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { buildVmTemplate } from "./build-vm-template";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { connectHost } from "./connect-host";
import { installProxmoxKernel } from "./install-proxmox-kernel";
import { installProxmoxRepository } from "./install-proxmox-repository";
import { installProxmoxVe } from "./install-proxmox-ve";
import { rebootIntoPveKernel } from "./reboot-into-pve-kernel";
import { createHostServices, type HostServices } from "./services";

/** Longer than every wait of this file: a run that ends here was woken by its abort. */
const POLL_SECONDS = 600;

let db: Database;
let harness: StepHarness;
let image: ImageServer;
let config: OnboardingConfig;
const pipelines: Record<string, Pipeline<HostServices>> = {};

/**
 * A status read (of a job or the build: the reads carry the watch signature) held while
 * `hold.armed`, until the tick's signal fires — or 15 s, which the test then reports as "no
 * signal". What the hold saw is the visit's signal: the one the services bind to its commands.
 */
const hold = {
  armed: false,
  holding: false,
  signalFired: null as boolean | null,
};
const isStatusRead = (command: string) =>
  command.includes("clupilot-watch-signature:") && !command.includes("nohup setsid");

async function holdIfArmed(command: string, signal: AbortSignal) {
  if (!hold.armed || !isStatusRead(command)) return;
  hold.armed = false;
  hold.holding = true;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 15_000);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  hold.signalFired = signal.aborted;
  hold.holding = false;
}

function pipeline(name: string, steps: Step<HostServices>[]) {
  const p = definePipeline<HostServices>({
    name,
    steps,
    services: (run, database, resources) => {
      const made = createHostServices(database, run, config, resources);
      const ssh = async (): Promise<SshSession> => {
        const session = await made.services.ssh();
        return {
          get hostKeySha256() {
            return session.hostKeySha256;
          },
          get alive() {
            return session.alive;
          },
          exec: async (command, options) => {
            await holdIfArmed(command, run.signal);
            return session.exec(command, options);
          },
          upload: (...args) => session.upload(...args),
          close: () => session.close(),
        };
      };
      const exec: HostServices["exec"] = async (command, options) => {
        await holdIfArmed(command, run.signal);
        return made.services.exec(command, options);
      };
      return { services: { ...made.services, ssh, exec }, dispose: made.dispose };
    },
  });
  pipelines[name] = p;
  return p;
}

let repository: Pipeline<HostServices>;
let kernel: Pipeline<HostServices>;
let pve: Pipeline<HostServices>;
let reboot: Pipeline<HostServices>;
let build: Pipeline<HostServices>;
let sleeper: Pipeline<HostServices>;
const sleeping = { started: false, error: null as string | null };

/** A visit whose one command runs long; it passes no signal: the services bind the visit's. */
const longCommand: Step<HostServices> = {
  name: "LongCommand",
  maxDuration: () => 600,
  async visit(ctx) {
    sleeping.started = true;
    try {
      await ctx.services.exec("sleep 300", { timeoutMs: 400_000 });
    } catch (error) {
      sleeping.error = error instanceof Error ? error.message : String(error);
      throw error;
    }
    return advance("slept");
  },
};

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 256 * 1024 });
  config = {
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    ...labProxmoxKeyring(image.keyringUrl),
    cloudImageUrl: image.imageUrl,
    cloudImageSumsUrl: image.sumsUrl,
    rebootDeadlineSeconds: 120,
    templateBuildDeadlineSeconds: 300,
    pollSeconds: POLL_SECONDS,
  };
  repository = pipeline("test-abort-repository", [connectHost, installProxmoxRepository(config)]);
  kernel = pipeline("test-abort-kernel", [
    connectHost,
    installProxmoxRepository(config),
    installProxmoxKernel(),
  ]);
  pve = pipeline("test-abort-pve", [
    connectHost,
    installProxmoxRepository(config),
    installProxmoxKernel(),
    rebootIntoPveKernel(config),
    installProxmoxVe(),
  ]);
  reboot = pipeline("test-abort-reboot", [connectHost, rebootIntoPveKernel(config)]);
  build = pipeline("test-abort-build", [connectHost, buildVmTemplate(config)]);
  sleeper = pipeline("test-abort-sleeper", [connectHost, longCommand]);
  harness = await startStepHarness({ pipelines, lab: { timeScale: 0.01 } });
  db = harness.db;
}, 120_000);
afterAll(async () => {
  await harness?.stop();
  await image?.stop();
});

let counter = 0;
async function addHost(node: LabNode): Promise<string> {
  const { hostId, runId } = await createLabHost(db, node, `abort-${++counter}`);
  await settledRun(db, runId);
  return hostId;
}

async function runRow(runId: string) {
  const [row] = await db.select().from(runs).where(eq(runs.id, runId));
  return row!;
}

/** The waiter's watch loops on this node (remote-watch.ts) whose process group still lives. */
function watchLoopsOn(node: LabNode): number[] {
  return node.commands
    .filter((c) => c.command.includes("clupilot-watch: unchanged"))
    .filter((c) => c.exit === null || liveGroupMembers(c.pid).length > 0)
    .map((c) => c.pid);
}

/** The run sits at `step`, the worker watches it, and (for a job) the watch loop runs. */
async function waitingAt(runId: string, step: string, node: LabNode | null) {
  await waitFor(
    `run ${runId} to wait at ${step}`,
    async () => {
      const row = await runRow(runId);
      if (row.status !== "running") throw new Error(`run ended: ${row.failureReason}`);
      return (
        row.currentStep === step &&
        row.stepVisit > 0 &&
        harness.worker.waits.watching().includes(runId) &&
        (node === null || watchLoopsOn(node).length > 0)
      );
    },
    90_000,
    50,
  );
}

async function pidOf(node: LabNode, file: string): Promise<number> {
  return Number((await readFile(path.join(node.root, file), "utf8")).trim());
}

/**
 * After an abort: aborted, the group and every watch loop gone, nothing watched; with
 * `killedNote`, the step's abort said it found the job alive and stopped it (it did not end by
 * itself). How soon each is gone is not this test's: bench:template times an abort.
 */
async function expectAbortedClean(
  runId: string,
  step: string,
  node: LabNode,
  group?: number,
  killedNote?: RegExp,
) {
  const ended = await settledRun(db, runId, 60_000);
  expect(ended).toMatchObject({ status: "failed", failureReason: ABORT_REASON, failedStep: step });
  if (group !== undefined) {
    await waitFor(
      "the remote process group to be gone",
      async () => !isProcessAlive(group) && liveGroupMembers(group).length === 0,
      60_000,
      50,
    );
  }
  await waitFor(
    "no watch loop on the host",
    async () => watchLoopsOn(node).length === 0,
    60_000,
    50,
  );
  expect(harness.worker.waits.watching()).not.toContain(runId);
  if (killedNote !== undefined) {
    const notes = (await readLogTail(db, runId, 1000)).map((line) => line.text);
    expect(notes).toContainEqual(expect.stringMatching(killedNote));
  }
}

/** What a remote job's abort logs when it found the job running and stopped it. */
const JOB_KILLED =
  /^abort: the apt(-get update)? job was (terminated|killed after it ignored TERM)$/;
/** The same of BuildVmTemplate's abort. */
const BUILD_KILLED =
  /^template build processes on the host: (terminated|killed after it ignored TERM)$/;

/** Aborts a run waiting on a detached job: its group (the job's pid file) lives, then is gone. */
async function abortWaitingJob(runId: string, step: string, node: LabNode, pidFile: string) {
  await waitingAt(runId, step, node);
  const group = await pidOf(node, pidFile);
  expect(isProcessAlive(group)).toBe(true);
  await abortRun(db, { runId, actor: "test" });
  await expectAbortedClean(runId, step, node, group, JOB_KILLED);
}

const UPDATE_PID = "var/lib/clupilot/jobs/apt-update/pid";
const KERNEL_PID = "var/lib/clupilot/jobs/install-proxmox-kernel/pid";
const PVE_PID = "var/lib/clupilot/jobs/install-proxmox-ve/pid";
const BUILD_PID = "var/lib/clupilot/template-build/pid";

describe("abort while a step waits for remote work", () => {
  it("a visit's command that runs long (no signal passed) stops with the visit's signal; its remote group is gone", async () => {
    const node = await harness.lab();
    const runId = await startTestRun(db, sleeper, await addHost(node));
    const running = await waitFor(
      "the long command to run",
      async () => node.commands.find((c) => c.command.includes("sleep 300") && c.exit === null),
      30_000,
      20,
    );
    await abortRun(db, { runId, actor: "test" });
    await expectAbortedClean(runId, "LongCommand", node, running.pid);
    expect(sleeping.error).toMatch(/abort/i);
  }, 60_000);

  it("InstallProxmoxRepository, between visits: the apt-get update job (behind a held dpkg lock) and the watch loop are gone", async () => {
    const node = await harness.lab({ timeScale: 0.3 });
    const runId = await startTestRun(db, repository, await addHost(node));
    node.setDebianFaults({ aptLocked: true });
    await abortWaitingJob(runId, "InstallProxmoxRepository", node, UPDATE_PID);
  }, 120_000);

  it("InstallProxmoxKernel, between visits: the apt job's group and the watch loop are gone", async () => {
    const node = await harness.lab({ timeScale: 0.3 });
    const runId = await startTestRun(db, kernel, await addHost(node));
    await abortWaitingJob(runId, "InstallProxmoxKernel", node, KERNEL_PID);
  }, 120_000);

  it("InstallProxmoxKernel, a visit in flight: its signal fires and the abort runs in that tick", async () => {
    const node = await harness.lab({ timeScale: 0.3 });
    const runId = await startTestRun(db, kernel, await addHost(node));
    await waitingAt(runId, "InstallProxmoxKernel", node);
    const group = await pidOf(node, KERNEL_PID);
    // A visit now, as a waiter's wake-up would make one; it stops in its status read.
    hold.signalFired = null;
    hold.armed = true;
    await db.transaction((tx) => scheduleTick(tx, runId, new Date()));
    await waitFor("the visit to be in flight", async () => hold.holding, 10_000, 20);
    await abortRun(db, { runId, actor: "test" });
    await expectAbortedClean(runId, "InstallProxmoxKernel", node, group, JOB_KILLED);
    expect(hold.signalFired).toBe(true);
    expect((await runRow(runId)).errorCount).toBe(0);
  }, 120_000);

  it("InstallProxmoxVe, between visits: the apt job's group and the watch loop are gone", async () => {
    const node = await harness.lab({ timeScale: 0.01 });
    const runId = await startTestRun(db, pve, await addHost(node));
    // Fast up to the reboot, then slow enough to catch proxmox-ve's install running.
    await waitFor(
      "the reboot step",
      async () => (await runRow(runId)).currentStep === "RebootIntoPveKernel",
      90_000,
      20,
    );
    node.setTiming({ timeScale: 0.3, rebootMs: 1000 });
    await abortWaitingJob(runId, "InstallProxmoxVe", node, PVE_PID);
  }, 180_000);

  it("RebootIntoPveKernel, while the host is down: the run ends and nothing keeps looking for the host", async () => {
    const node = await harness.lab();
    markInstalled(node.root, [
      { name: "proxmox-default-kernel", version: "2.0.0", architecture: "all" },
    ]);
    writeNextKernel(node.root, PVE_KERNEL);
    node.setDebianFaults({ rebootTakesMs: 8000 });
    const runId = await startTestRun(db, reboot, await addHost(node));
    await waitingAt(runId, "RebootIntoPveKernel", null);
    await waitFor("the host to go down", async () => node.power.state !== "up", 20_000, 20);
    await abortRun(db, { runId, actor: "test" });
    await expectAbortedClean(runId, "RebootIntoPveKernel", node);
    // Once it is back, no waiter of the aborted run logs in to look at it.
    await node.power.waitUntilUp(30_000);
    const logins = node.authAttempts.length;
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(node.authAttempts.length).toBe(logins);
  }, 120_000);

  it("BuildVmTemplate, between visits and with a visit in flight: the driver's group and the watch loop are gone", async () => {
    await setCatalog(db, [9000]);
    for (const inFlight of [false, true]) {
      const node = await harness.lab({ state: "onboarded", storage: "dir", timeScale: 0.3 });
      const runId = await startTestRun(db, build, await insertOnboardedHost(db, node));
      await waitingAt(runId, "BuildVmTemplate", node);
      const group = await pidOf(node, BUILD_PID);
      expect(isProcessAlive(group)).toBe(true);
      if (inFlight) {
        hold.signalFired = null;
        hold.armed = true;
        await db.transaction((tx) => scheduleTick(tx, runId, new Date()));
        await waitFor("the visit to be in flight", async () => hold.holding, 10_000, 20);
      }
      await abortRun(db, { runId, actor: "test" });
      await expectAbortedClean(runId, "BuildVmTemplate", node, group, BUILD_KILLED);
      if (inFlight) expect(hold.signalFired).toBe(true);
    }
  }, 180_000);
});
