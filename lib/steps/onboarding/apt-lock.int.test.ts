import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { definePipeline, type Pipeline, type Step } from "@/lib/pipeline/step";
import { startImageServer, type ImageServer, type LabNode } from "@/lab";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { runRow, settled as settledRun, startTestRun } from "@/test/runs";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { connectHost } from "./connect-host";
import { installProxmoxKernel } from "./install-proxmox-kernel";
import { installProxmoxRepository } from "./install-proxmox-repository";
import { createLabHost } from "@/test/lab-host";
import { createHostServices, type HostServices } from "./services";

/**
 * A fresh Debian machine's apt-daily holds the dpkg lock: the lab's `debian.aptLocked` switch
 * (process 1873, apt-get). Lab time runs at 1/4, and the lab's apt waits `DPkg::Lock::Timeout`
 * lab seconds.
 */
const TIME_SCALE = 0.25;
/** apt's own wait for the lock as the phase line shows it, and the job's wait between tries. */
const APT_WAITS =
  /^Waiting for cache lock: Could not get lock \/var\/lib\/dpkg\/lock-frontend\. It is held by process 1873 \(apt-get\)\.\.\. \d+s$/;
const JOB_WAITS = (bound: number) =>
  new RegExp(
    `^waiting for apt's lock: /var/lib/dpkg/lock-frontend is held by process 1873 \\(apt-get\\) \\(\\d+ s of ${bound} s\\)$`,
  );

let db: Database;
let harness: StepHarness;
let image: ImageServer;
const pipelines: Record<string, Pipeline<HostServices>> = {};

function pipeline(name: string, cfg: OnboardingConfig, steps: Step<HostServices>[]) {
  const p = definePipeline<HostServices>({
    name,
    steps: [connectHost, ...steps],
    services: (run, database, resources) => createHostServices(database, run, cfg, resources),
  });
  pipelines[name] = p;
  return p;
}

let config: (lockSeconds: number) => OnboardingConfig;
let repositoryPatient: Pipeline<HostServices>;
let repositoryHasty: Pipeline<HostServices>;
let kernelPatient: Pipeline<HostServices>;
let kernelHasty: Pipeline<HostServices>;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  config = (aptLockTimeoutSeconds) => ({
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    ...labProxmoxKeyring(image.keyringUrl),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    pollSeconds: 0.2,
    aptLockTimeoutSeconds,
  });
  const patient = config(60);
  const hasty = config(4);
  repositoryPatient = pipeline("test-apt-lock-repository-60", patient, [
    installProxmoxRepository(patient),
  ]);
  repositoryHasty = pipeline("test-apt-lock-repository-4", hasty, [
    installProxmoxRepository(hasty),
  ]);
  kernelPatient = pipeline("test-apt-lock-kernel-60", patient, [installProxmoxKernel()]);
  kernelHasty = pipeline("test-apt-lock-kernel-4", hasty, [installProxmoxKernel()]);
  harness = await startStepHarness({ pipelines, lab: { timeScale: TIME_SCALE } });
  db = harness.db;
});
afterAll(async () => {
  await harness?.stop();
  await image?.stop();
});

let counter = 0;
async function addHost(node: LabNode): Promise<string> {
  const { hostId, runId } = await createLabHost(db, node, `apt-lock-${++counter}`);
  await settledRun(db, runId);
  return hostId;
}

/** Runs the pipeline to its end, recording every phase line the run showed meanwhile. */
async function runWatchingPhases(
  p: Pipeline<HostServices>,
  hostId: string,
  onPhase: (phase: string) => void = () => {},
) {
  const runId = await startTestRun(db, p, hostId);
  const phases = new Set<string>();
  let done = false;
  const watching = (async () => {
    while (!done) {
      const phase = (await runRow(db, runId)).phase;
      if (phase && !phases.has(phase)) {
        phases.add(phase);
        onPhase(phase);
      }
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  })();
  const run = await settledRun(db, runId, 60_000);
  done = true;
  await watching;
  return { run, phases: [...phases] };
}

/**
 * Holds the lock now and lets it go once the run's phase line matches `seen`: the lock outlasts
 * exactly the waits a test asks about, however slowly the machine gets the run there (a lock
 * held for a fixed time could be gone before apt first asked for it).
 */
function holdLockUntil(node: LabNode, seen: RegExp): (phase: string) => void {
  node.setDebianFaults({ aptLocked: true });
  return (phase) => {
    if (seen.test(phase)) node.setDebianFaults({ aptLocked: false });
  };
}

const read = (node: LabNode, file: string) => readFile(path.join(node.root, file), "utf8");

describe.concurrent("apt waits for the dpkg lock, and says who holds it", () => {
  it("lock held past apt's own wait: InstallProxmoxRepository's update job waits (the phase line names the holder) and succeeds", async () => {
    const node = await lab();
    const hostId = await addHost(node);
    // Held until the job waits between attempts: apt's own wait (10 s per attempt) is over.
    const release = holdLockUntil(node, JOB_WAITS(60));
    const { run, phases } = await runWatchingPhases(repositoryPatient, hostId, release);
    expect(run.failureReason ?? "").toBe("");
    expect(run.status).toBe("succeeded");
    // apt's own wait, then the job's wait between attempts, both naming it.
    expect(phases).toContainEqual(expect.stringMatching(APT_WAITS));
    expect(phases).toContainEqual(expect.stringMatching(JOB_WAITS(60)));
    expect(await read(node, "etc/apt/sources.list.d/pve-install-repo.sources")).toContain(
      "Components: pve-no-subscription",
    );
  });

  it("lock held past the bound: InstallProxmoxRepository fails naming the holder, with the lock's advice", async () => {
    const node = await lab();
    const hostId = await addHost(node);
    node.setDebianFaults({ aptLocked: true });
    const { run, phases } = await runWatchingPhases(repositoryHasty, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "InstallProxmoxRepository" });
    // Tried again in between, each time naming the holder, before the bound ran out.
    expect(phases).toContainEqual(expect.stringMatching(JOB_WAITS(4)));
    expect(run.failureReason).toMatch(
      /^apt-get update failed \(exit 100\): .*E: Could not get lock \/var\/lib\/dpkg\/lock-frontend\. It is held by process 1873 \(apt-get\).* — the dpkg lock is held by process 1873 \(apt-get\) for longer than the 4 s apt waited — on a fresh machine usually apt-daily or unattended-upgrades; let it finish \(see it with `ps -fp 1873`\), never delete the lock file, then Retry$/,
    );
    expect(run.failureReason).not.toContain("fix what the output names");
  });

  it("lock held while apt waits: InstallProxmoxKernel's apt waits (apt's 'Waiting for cache lock' is the phase line) and installs", async () => {
    const node = await lab();
    const hostId = await addHost(node);
    expect((await settledRun(db, await startTestRun(db, repositoryPatient, hostId))).status).toBe(
      "succeeded",
    );
    const release = holdLockUntil(node, APT_WAITS);
    const { run, phases } = await runWatchingPhases(kernelPatient, hostId, release);
    expect(run.failureReason ?? "").toBe("");
    expect(run.status).toBe("succeeded");
    expect(phases).toContainEqual(expect.stringMatching(APT_WAITS));
    expect(await read(node, "var/lib/dpkg/status")).toContain("Package: proxmox-default-kernel\n");
  });

  it("lock held past the bound: InstallProxmoxKernel fails naming the holder, with the lock's advice instead of the generic one", async () => {
    const node = await lab();
    const hostId = await addHost(node);
    expect((await settledRun(db, await startTestRun(db, repositoryPatient, hostId))).status).toBe(
      "succeeded",
    );
    node.setDebianFaults({ aptLocked: true });
    const { run } = await runWatchingPhases(kernelHasty, hostId);
    expect(run).toMatchObject({ status: "failed", failedStep: "InstallProxmoxKernel" });
    expect(run.failureReason).toMatch(
      /^installing proxmox-default-kernel failed \(exit 100\): .*E: Could not get lock \/var\/lib\/dpkg\/lock-frontend\. It is held by process 1873 \(apt-get\) ⏎ .* — the dpkg lock is held by process 1873 \(apt-get\) for longer than the 4 s apt waited — .*never delete the lock file, then Retry$/,
    );
    expect(run.failureReason).not.toContain("fix what the output names");
    expect(await read(node, "var/lib/dpkg/status")).not.toContain(
      "Package: proxmox-default-kernel\n",
    );
  });
});

const lab = () => harness.lab();
