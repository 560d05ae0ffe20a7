import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { createHost } from "@/lib/hosts/create-host";
import { hostStateOf } from "@/lib/hosts/host-state";
import { definePipeline, type Pipeline, type Step } from "@/lib/pipeline/step";
import { retryRun } from "@/lib/runs/retry-run";
import {
  isProcessAlive,
  startImageServer,
  type ImageServer,
  type LabNode,
  type StartLabOptions,
} from "@/lab";
import { PVE_KERNEL } from "@/lab/debian/catalog";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { markInstalled } from "@/lab/debian/dpkg-status";
import { createPmxcfs } from "@/lab/pve/seed";
import { readKernel, writeNextKernel } from "@/lab/debian/lab-state";
import { setCatalog } from "@/test/fixtures/build-vm-template";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { waitFor } from "@/test/worker-process";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { configureProxmox } from "./configure-proxmox";
import { connectHost } from "./connect-host";
import { installProxmoxKernel } from "./install-proxmox-kernel";
import { installProxmoxRepository } from "./install-proxmox-repository";
import { REBOOT_COMMAND, rebootIntoPveKernel } from "./reboot-into-pve-kernel";
import { createHostServices, type HostServices } from "./services";
import { runRow as runRowOf, settled as settledRun, startTestRun } from "@/test/runs";

/**
 * The onboarding chain against the lab's faults (issue 5, "Tests"): each failure stops the run
 * at the step that met it, with one line that says what happened and what to do; and a worker
 * killed with SIGKILL in the middle of the reboot and of the Proxmox VE install leaves a run
 * that the next worker process finishes, without a second reboot or a second apt job.
 */

let db: Database;
let dbUrl: string;
let harness: StepHarness;
let image: ImageServer;
let cleanup: () => Promise<void>;
const children: ChildProcess[] = [];

let config: OnboardingConfig;
const pipelines: Record<string, Pipeline<HostServices>> = {};

function pipeline(name: string, steps: Step<HostServices>[]) {
  const p = definePipeline<HostServices>({
    name,
    steps,
    services: (run, database, resources) => createHostServices(database, run, config, resources),
  });
  pipelines[name] = p;
  return p;
}

let repositoryOnly: Pipeline<HostServices>;
let kernelOnly: Pipeline<HostServices>;
let rebootOnly: Pipeline<HostServices>;
let networkOnly: Pipeline<HostServices>;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  config = {
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    ...labProxmoxKeyring(image.keyringUrl),
    pollSeconds: 0.2,
    rebootDeadlineSeconds: 60,
  };
  repositoryOnly = pipeline("test-faults-repository", [
    connectHost,
    installProxmoxRepository(config),
  ]);
  kernelOnly = pipeline("test-faults-kernel", [connectHost, installProxmoxKernel()]);
  rebootOnly = pipeline("test-faults-reboot", [connectHost, rebootIntoPveKernel(config)]);
  networkOnly = pipeline("test-faults-network", [connectHost, configureProxmox]);

  // Only the test pipelines: the onboard-host run createHost starts fails at once ("not known
  // to this worker") without touching the host, leaving it to the test's own runs. The crash
  // test stops this worker and runs onboard-host in real worker processes.
  harness = await startStepHarness({
    pipelines,
    worker: { periodicChecks: false },
    lab: { timeScale: 0.01 },
  });
  db = harness.db;
  dbUrl = harness.databaseUrl;
  cleanup = async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await harness.stop();
    await image.stop();
  };
});
afterAll(() => cleanup());

const lab = (options?: StartLabOptions) => harness.lab(options);

let counter = 0;
async function addHost(node: LabNode): Promise<{ hostId: string; runId: string }> {
  return createHost(
    db,
    {
      name: `faults-${++counter}`,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: Number(new URL(node.api.url).port),
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    },
    "test",
  );
}

/** A host for the test's own pipelines: the onboard-host run createHost started has ended. */
async function addTestHost(node: LabNode): Promise<string> {
  const { hostId, runId } = await addHost(node);
  await settled(runId);
  return hostId;
}

const run = (p: Pipeline<HostServices>, hostId: string) => startTestRun(db, p, hostId);

const runRow = (runId: string) => runRowOf(db, runId);

async function hostRow(hostId: string) {
  const [row] = await db.select().from(hosts).where(eq(hosts.id, hostId));
  return row!;
}

const settled = (runId: string, timeoutMs?: number) => settledRun(db, runId, timeoutMs);

const read = (node: LabNode, file: string) => readFile(path.join(node.root, file), "utf8");

/** The kernel package installed and the next boot's kernel chosen, without running apt. */
function kernelInstalled(node: LabNode, nextBoot: { release: string; version: string }) {
  markInstalled(node.root, [
    { name: "proxmox-default-kernel", version: "2.0.0", architecture: "all" },
  ]);
  writeNextKernel(node.root, nextBoot);
}

describe.concurrent("onboarding failure paths against the lab's faults", () => {
  it("package install fails (apt locked by another process): InstallProxmoxKernel fails with apt's one-line reason; Retry after the lock is gone installs it", async () => {
    const node = await lab();
    const hostId = await addTestHost(node);
    expect((await settled(await run(repositoryOnly, hostId))).status).toBe("succeeded");

    node.setDebianFaults({ aptLocked: true });
    const runId = await run(kernelOnly, hostId);
    const failed = await settled(runId);
    expect(failed).toMatchObject({
      status: "failed",
      failedStep: "InstallProxmoxKernel",
      errorCount: 0,
    });
    // What happened (the install, apt's exit status, who holds the lock) and what to do
    // (apt's own hint: another process is using it), on one line.
    expect(failed.failureReason).toMatch(
      /^installing proxmox-default-kernel failed \(exit 100\): .*E: Could not get lock \/var\/lib\/dpkg\/lock-frontend\. It is held by process \d+ \(apt-get\) ⏎ N: Be aware that removing the lock file is not a solution and may break your system\. ⏎ E: Unable to acquire the dpkg frontend lock \(\/var\/lib\/dpkg\/lock-frontend\), is another process using it\? — the dpkg lock is held by process \d+ \(apt-get\) for longer than the 300 s apt waited — .*, then Retry$/,
    );
    expect(await read(node, "var/lib/dpkg/status")).not.toContain(
      "Package: proxmox-default-kernel\n",
    );

    // The failed job's status was cleared: a Retry starts it afresh instead of re-reading "failed".
    node.setDebianFaults({ aptLocked: false });
    await retryRun(db, { runId, actor: "test" });
    const retried = await settled(runId);
    expect(retried.failureReason ?? "").toBe("");
    expect(retried.status).toBe("succeeded");
    expect(await read(node, "var/lib/dpkg/status")).toContain("Package: proxmox-default-kernel\n");
  });

  it("reboot returns with the old kernel: RebootIntoPveKernel fails at once, naming the kernel and the boot loader to check", async () => {
    const node = await lab();
    const debian = readKernel(node.root, "running")!;
    expect(debian.release).toMatch(/-amd64$/);
    // proxmox-default-kernel is installed, but the boot loader still picks the Debian kernel.
    kernelInstalled(node, debian);
    const hostId = await addTestHost(node);
    const failed = await settled(await run(rebootOnly, hostId));
    expect(failed).toMatchObject({
      status: "failed",
      failedStep: "RebootIntoPveKernel",
      errorCount: 0,
    });
    expect(failed.failureReason).toMatch(
      new RegExp(
        `^the host rebooted \\(after \\d+ s\\) but came back with kernel ${debian.release.replace(/[.+]/g, "\\$&")}, not a Proxmox kernel; check the boot loader's default entry \\(GRUB\\) on the host's console, then Retry$`,
      ),
    );
    expect(node.power.history).toHaveLength(1);
    expect(node.power.history[0]).toMatchObject({
      kernelBefore: debian.release,
      kernelAfter: debian.release,
    });
  });

  it("host key changed while the host was down: refused, naming both fingerprints; nothing is sent and the pin never moves, also on Retry", async () => {
    const node = await lab();
    kernelInstalled(node, PVE_KERNEL);
    // Down long enough to rotate the key in between (real ms).
    node.setDebianFaults({ rebootTakesMs: 1500 });
    const hostId = await addTestHost(node);
    const runId = await run(rebootOnly, hostId);
    await waitFor(
      "the host to go down for the reboot",
      async () => node.power.state === "down" || node.power.state === "booting",
      30_000,
      20,
    );
    const pinned = (await hostRow(hostId)).hostKeySha256;
    expect(pinned).toBe(node.ssh.hostKeySha256);
    await node.rotateHostKey();
    const offered = node.ssh.hostKeySha256;
    expect(offered).not.toBe(pinned);
    const authBefore = node.authAttempts.length;

    const failed = await settled(runId);
    expect(failed).toMatchObject({
      status: "failed",
      failedStep: "RebootIntoPveKernel",
      errorCount: 0,
    });
    const reason = failed.failureReason ?? "";
    expect(reason).toContain(`pinned ${pinned}`);
    expect(reason).toContain(`offered ${offered}`);
    expect(reason).toMatch(/changed: .*refused to connect.*clear the pin on the host page/);
    expect(reason).not.toContain("\n");
    // The host did come back with the Proxmox kernel: only the key stopped the run.
    expect(node.power.history).toHaveLength(1);
    expect(node.power.history[0]!.kernelAfter).toBe(PVE_KERNEL.release);

    await retryRun(db, { runId, actor: "test" });
    const again = await settled(runId);
    expect(again).toMatchObject({ status: "failed", failedStep: "RebootIntoPveKernel" });
    expect(again.failureReason).toContain(`offered ${offered}`);
    expect((await hostRow(hostId)).hostKeySha256).toBe(pinned);
    // Refused before authentication: the password never went to the new key's owner.
    expect(node.authAttempts.length).toBe(authBefore);
    expect(node.power.history).toHaveLength(1);
  });

  it("bridge config rejected by ifreload: ConfigureProxmox fails with ifreload's error, the old /etc/network/interfaces is back and applied; Retry without the fault bridges", async () => {
    const node = await lab();
    markInstalled(node.root, [{ name: "ifupdown2", version: "3.2.0-1", architecture: "all" }]);
    // ConfigureProxmox also ensures an image storage: one that takes images already (this test
    // is about the bridge; Debian here has no pvesm to add them with).
    createPmxcfs(node.root, { node: "pve1", storage: "dir" });
    const interfacesBefore = await read(node, "etc/network/interfaces");
    const appliedBefore = await read(node, ".lab/network-applied");
    node.setDebianFaults({ ifreloadRejectsBridges: true });
    const hostId = await addTestHost(node);
    const runId = await run(networkOnly, hostId);
    const failed = await settled(runId);
    expect(failed).toMatchObject({
      status: "failed",
      failedStep: "ConfigureProxmox",
      errorCount: 0,
    });
    expect(failed.failureReason).toMatch(
      /^ifreload -a refused the vmbr0 configuration, so the old one was restored: error: vmbr0: cmd '\/bin\/ip link add name vmbr0 type bridge' failed: returned 2 \(Error: Unknown device type\./,
    );
    expect(failed.failureReason).toMatch(/then Retry$/);
    expect(failed.failureReason).not.toContain("\n");
    expect(await read(node, "etc/network/interfaces")).toBe(interfacesBefore);
    expect(await read(node, ".lab/network-applied")).toBe(appliedBefore);
    expect(existsSync(path.join(node.root, "etc/network/interfaces.clupilot-new"))).toBe(false);

    node.setDebianFaults({ ifreloadRejectsBridges: false });
    await retryRun(db, { runId, actor: "test" });
    const retried = await settled(runId);
    expect(retried.failureReason ?? "").toBe("");
    expect(retried.status).toBe("succeeded");
    expect(await read(node, ".lab/network-applied")).toContain("iface vmbr0 inet static");
  });
});

describe("worker kill -9 during the whole onboarding", () => {
  it("killed while the host is down for the reboot, and again while apt installs Proxmox VE: the next worker finishes the run, the host is active, one reboot, one apt job", async () => {
    // From here on only real worker processes run onboard-host.
    await harness.worker.stop();
    await setCatalog(db, [9100]); // BuildVmTemplate builds one template (and enables images on local)
    const node = await lab();
    // The host stays down 3 s (real) after the reboot: time to kill the worker meanwhile.
    node.setDebianFaults({ rebootTakesMs: 3000 });
    const { hostId, runId } = await addHost(node);

    const first = await spawnOnboardingWorker();
    await waitFor(
      "the run to wait for the rebooting host",
      async () =>
        (await runRow(runId)).currentStep === "RebootIntoPveKernel" &&
        (node.power.state === "down" || node.power.state === "booting"),
      120_000,
      50,
    );
    await kill(first);
    expect((await runRow(runId)).status).toBe("running");

    // The Proxmox VE install slowed down, so the second kill meets apt at work.
    node.setTiming({ timeScale: 0.2 });
    const second = await spawnOnboardingWorker();
    const pidFile = path.join(node.root, "var/lib/clupilot/jobs/install-proxmox-ve/pid");
    const pid = await waitFor(
      "the Proxmox VE apt job to run",
      async () => {
        if ((await runRow(runId)).currentStep !== "InstallProxmoxVe") return null;
        const text = await readFile(pidFile, "utf8").catch(() => "");
        const value = Number(text.trim());
        return value > 0 && isProcessAlive(value) ? value : null;
      },
      60_000,
      50,
    );
    await kill(second);
    expect((await runRow(runId)).status).toBe("running");
    expect(isProcessAlive(pid)).toBe(true); // the job lives on without its worker
    node.setTiming({ timeScale: 0.01 });

    const third = await spawnOnboardingWorker();
    const done = await settled(runId, 180_000).catch((error: Error) => {
      throw new Error(`${error.message}\nworker said:\n${third.output()}`);
    });
    await stopChild(third.child);
    expect(done.failureReason ?? "", third.output()).toBe("");
    expect(done).toMatchObject({ status: "succeeded", currentStep: "RegisterCapacity" });
    expect(hostStateOf(done.status)).toBe("active");
    expect((await hostRow(hostId)).capacityRegisteredAt).not.toBeNull();

    // Exactly one reboot, into the Proxmox kernel; exactly one reboot requested over SSH.
    expect(node.power.history).toHaveLength(1);
    expect(node.power.history[0]!.kernelAfter).toBe(PVE_KERNEL.release);
    expect(node.commands.filter((c) => c.command.includes(REBOOT_COMMAND))).toHaveLength(1);
    // Exactly one Proxmox VE apt job: one start over SSH, and the job that finished is the one
    // that ran when the worker died (adopted, not started again).
    const jobStarts = node.commands.filter(
      (c) =>
        c.command.includes("/jobs/install-proxmox-ve") &&
        c.command.includes('nohup setsid bash "$d/run.sh"'),
    );
    expect(jobStarts).toHaveLength(1);
    expect(Number((await readFile(pidFile, "utf8")).trim())).toBe(pid);
    expect(
      await readFile(path.join(path.dirname(pidFile), "state"), "utf8").catch(() => "gone"),
    ).toBe("ok\n");
    expect(await read(node, "var/lib/dpkg/status")).toContain("Package: proxmox-ve\n");
  }, 300_000);
});

type Child = { child: ChildProcess; output: () => string };

/** The whole onboard-host pipeline in its own Node process (test/fixtures/onboarding-worker.ts). */
async function spawnOnboardingWorker(): Promise<Child> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/onboarding-worker.ts"], {
    cwd: path.resolve(import.meta.dirname, "../../.."),
    env: {
      ...process.env,
      DATABASE_URL: dbUrl,
      ONB_IMAGE_URL: image.imageUrl,
      ONB_SUMS_URL: image.sumsUrl,
      ONB_KEYRING_URL: image.keyringUrl,
      ONB_POLL_SECONDS: "0.3",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  await waitFor(
    "the onboarding worker to start",
    async () => {
      if (child.exitCode !== null) throw new Error(`the worker exited early:\n${output}`);
      return /ready \d+/.test(output);
    },
    30_000,
  );
  return { child, output: () => output };
}

async function kill({ child }: Child): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
  });
}
