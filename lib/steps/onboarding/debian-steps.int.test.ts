import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { createHost } from "@/lib/hosts/create-host";
import { ABORT_REASON } from "@/lib/pipeline/engine";
import { definePipeline, type Pipeline, type Step } from "@/lib/pipeline/step";
import { abortRun } from "@/lib/runs/abort-run";
import {
  isProcessAlive,
  liveGroupMembers,
  startImageServer,
  type ImageServer,
  type LabNode,
  type StartLabOptions,
} from "@/lab";
import { PVE_KERNEL } from "@/lab/debian/catalog";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { markInstalled } from "@/lab/debian/dpkg-status";
import { labSession } from "@/lab/test-helpers";
import { writeNextKernel } from "@/lab/debian/lab-state";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { waitFor } from "@/test/worker-process";
import { checkOperatingSystem } from "./check-operating-system";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { configureProxmox } from "./configure-proxmox";
import { connectHost } from "./connect-host";
import { installProxmoxKernel } from "./install-proxmox-kernel";
import { installProxmoxRepository, SOURCES_NAME } from "./install-proxmox-repository";
import { startJobCommand } from "../remote-job/remote-job";
import { installProxmoxVe } from "./install-proxmox-ve";
import { prepareHostname } from "./prepare-hostname";
import { rebootIntoPveKernel } from "./reboot-into-pve-kernel";
import { createHostServices, type HostServices } from "./services";
import { runLogText, settled as settledRun, startTestRun } from "@/test/runs";
import { snapshotLabFiles } from "@/test/lab-file-snapshot";

let db: Database;
let harness: StepHarness;
let image: ImageServer;
let cleanup: () => Promise<void>;

let config: OnboardingConfig;
const pipelines: Record<string, Pipeline<HostServices>> = {};

function pipeline(name: string, steps: Step<HostServices>[], cfg = config) {
  const p = definePipeline<HostServices>({
    name,
    steps,
    services: (run, database, resources) => createHostServices(database, run, cfg, resources),
  });
  pipelines[name] = p;
  return p;
}

let full: Pipeline<HostServices>;
let repositoryOnly: Pipeline<HostServices>;
let rebootOnly: Pipeline<HostServices>;
let kernelOnly: Pipeline<HostServices>;

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
  full = pipeline("test-debian-steps", [
    connectHost,
    checkOperatingSystem(config),
    prepareHostname,
    installProxmoxRepository(config),
    installProxmoxKernel(),
    rebootIntoPveKernel(config),
    installProxmoxVe(),
    configureProxmox,
  ]);
  repositoryOnly = pipeline("test-debian-repository", [
    connectHost,
    installProxmoxRepository(config),
  ]);
  const shortReboot = { ...config, rebootDeadlineSeconds: 3 };
  rebootOnly = pipeline(
    "test-debian-reboot-deadline",
    [connectHost, rebootIntoPveKernel(shortReboot)],
    shortReboot,
  );
  kernelOnly = pipeline("test-debian-kernel", [
    connectHost,
    installProxmoxRepository(config),
    installProxmoxKernel(),
  ]);

  // Only these pipelines: the onboard-host run createHost starts fails at once without
  // touching the host ("not known to this worker"), leaving the host to the test's own runs.
  harness = await startStepHarness({ pipelines, lab: { timeScale: 0.01 } });
  db = harness.db;
  cleanup = async () => {
    await harness.stop();
    await image.stop();
  };
});
afterAll(() => cleanup());

const lab = (options?: StartLabOptions) => harness.lab(options);

let counter = 0;
async function addHost(node: LabNode): Promise<string> {
  const { hostId, runId } = await createHost(
    db,
    {
      name: `debian-${++counter}`,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: 8006,
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    },
    "test",
  );
  await settled(runId);
  return hostId;
}

const run = (p: Pipeline<HostServices>, hostId: string) => startTestRun(db, p, hostId);

const settled = (runId: string, timeoutMs?: number) => settledRun(db, runId, timeoutMs);

const read = (node: LabNode, file: string) => readFile(path.join(node.root, file), "utf8");

describe.concurrent("Debian-side onboarding steps against a fresh lab node over real SSH", () => {
  it("a fresh Debian 13 node goes through every step to a Proxmox host with vmbr0; a second run changes nothing and does not reboot again", async () => {
    const node = await lab();
    const hostId = await addHost(node);
    const first = await settled(await run(full, hostId), 120_000);
    expect(first.failureReason ?? "").toBe("");
    expect(first).toMatchObject({ status: "succeeded", currentStep: "ConfigureProxmox" });

    // PrepareHostname: the 127.0.1.1 line became the host's own address, the rest stayed.
    const hosts = await read(node, "etc/hosts");
    expect(hosts).toContain("192.0.2.10\tpve1.lab.internal\tpve1\n");
    expect(hosts).not.toContain("127.0.1.1");
    expect(hosts).toContain("127.0.0.1\tlocalhost\n");
    expect(hosts).toContain("ff02::2 ip6-allrouters");
    // InstallProxmoxRepository: deb822 source, keyring, index fetched.
    expect(await read(node, "etc/apt/sources.list.d/pve-install-repo.sources")).toContain(
      "Signed-By: /usr/share/keyrings/proxmox-archive-keyring.gpg",
    );
    expect(
      (await readFile(path.join(node.root, "usr/share/keyrings/proxmox-archive-keyring.gpg")))[0],
    ).toBe(0x98);
    // Kernel, reboot, Proxmox VE: one reboot, Proxmox kernel running, Debian kernel gone.
    expect(node.power.history).toHaveLength(1);
    expect(node.power.history[0]!.kernelAfter).toBe(PVE_KERNEL.release);
    const dpkg = await read(node, "var/lib/dpkg/status");
    for (const name of ["proxmox-ve", "postfix", "open-iscsi", "chrony", "proxmox-default-kernel"])
      expect(dpkg).toContain(`Package: ${name}\n`);
    for (const name of ["linux-image-amd64", "linux-image-6.12.57+deb13-amd64", "os-prober"])
      expect(dpkg).not.toContain(`Package: ${name}\n`);
    expect(await read(node, "etc/postfix/main.cf")).toContain("inet_interfaces = loopback-only");
    // ConfigureProxmox: vmbr0 carries the address, the old file is kept as a backup.
    const interfaces = await read(node, "etc/network/interfaces");
    expect(interfaces).toContain(
      "iface eno1 inet manual\n\nauto vmbr0\niface vmbr0 inet static\n\taddress 192.0.2.10/24\n\tgateway 192.0.2.1\n\tbridge-ports eno1\n",
    );
    expect(interfaces).toContain("auto lo\niface lo inet loopback\n");
    expect(await read(node, "etc/network/interfaces.clupilot-bak")).toContain(
      "auto eno1\niface eno1 inet static",
    );
    expect(await read(node, ".lab/network-applied")).toBe(interfaces);
    // ConfigureProxmox: Proxmox over Debian left 'local' without images; it takes them now.
    expect(await read(node, "etc/pve/storage.cfg")).toContain(
      "\tcontent iso,vztmpl,backup,images\n",
    );

    // Again on the finished node: every step's goal holds, nothing is touched, no reboot.
    const before = await snapshotLabFiles(node.root);
    const second = await settled(await run(full, hostId), 60_000);
    expect(second.failureReason ?? "").toBe("");
    expect(second.status).toBe("succeeded");
    expect(node.power.history).toHaveLength(1);
    const after = await snapshotLabFiles(node.root);
    const changed = [...new Set([...before.keys(), ...after.keys()])].filter(
      (file) => before.get(file) !== after.get(file),
    );
    expect(changed).toEqual([]);
  }, 120_000);

  it("apt cannot reach its mirrors: InstallProxmoxRepository fails with apt's reason, not a silent exit 0", async () => {
    const node = await lab();
    node.setDebianFaults({ aptNetworkDown: true });
    const hostId = await addHost(node);
    const failed = await settled(await run(repositoryOnly, hostId));
    expect(failed).toMatchObject({ status: "failed", failedStep: "InstallProxmoxRepository" });
    expect(failed.failureReason).toMatch(
      /^apt-get update failed \(exit 100\): .*Failed to fetch http:\/\/\S+ +Temporary failure resolving '[^']+'.*check the host's DNS/,
    );
  });

  it("a reboot that never returns fails after the step's own deadline, saying how long it waited and what it saw", async () => {
    const node = await lab();
    markInstalled(node.root, [
      { name: "proxmox-default-kernel", version: "2.0.0", architecture: "all" },
    ]);
    writeNextKernel(node.root, PVE_KERNEL);
    node.setDebianFaults({ rebootNeverReturns: true });
    const hostId = await addHost(node);
    const failed = await settled(await run(rebootOnly, hostId));
    expect(failed).toMatchObject({
      status: "failed",
      failedStep: "RebootIntoPveKernel",
      errorCount: 0,
    });
    // The last look meets the host gone: refused, or — when the machine is slow and sshd goes
    // down only as that look runs — cut mid-command. Never an answer from the old kernel.
    expect(failed.failureReason).toMatch(
      /^the host did not come back with a Proxmox kernel within 3 s of the reboot \(waited [3-9] s\); last seen: (connection refused|the connection was lost)\./,
    );
    expect(node.power.history).toHaveLength(1);
    expect(node.power.history[0]!.downAt).not.toBeNull();
    expect(node.power.history[0]!.upAt).toBeNull();
  });

  it("Abort during a long apt job kills the job's whole process group on the host", async () => {
    const node = await lab({ timeScale: 0.3 });
    const hostId = await addHost(node);
    const runId = await run(kernelOnly, hostId);
    const pidFile = path.join(node.root, "var/lib/clupilot/jobs/install-proxmox-kernel/pid");
    const pid = await waitFor(
      "the kernel job to run",
      async () => {
        const [row] = await db.select().from(runs).where(eq(runs.id, runId));
        if (row?.status !== "running" || row.currentStep !== "InstallProxmoxKernel") return null;
        const text = await readFile(pidFile, "utf8").catch(() => "");
        return Number(text.trim()) || null;
      },
      60_000,
    );
    expect(isProcessAlive(pid)).toBe(true);
    await abortRun(db, { runId, actor: "test" });
    const failed = await settled(runId);
    expect(failed).toMatchObject({
      status: "failed",
      failureReason: ABORT_REASON,
      failedStep: "InstallProxmoxKernel",
    });
    expect(isProcessAlive(pid)).toBe(false);
    // Nothing of the group is left alive (apt-get and its children died with the shell).
    expect(liveGroupMembers(pid)).toEqual([]);
    expect(await read(node, "var/lib/dpkg/status")).not.toContain(
      "Package: proxmox-default-kernel\n",
    );
  });

  it("a live apt job left by an earlier run is adopted, not started a second time", async () => {
    const node = await lab({ timeScale: 0.3 });
    const hostId = await addHost(node);
    const first = await run(kernelOnly, hostId);
    const pidFile = path.join(node.root, "var/lib/clupilot/jobs/install-proxmox-kernel/pid");
    const pid = await waitFor(
      "the kernel job to run",
      async () => {
        const text = await readFile(pidFile, "utf8").catch(() => "");
        return Number(text.trim()) || null;
      },
      60_000,
    );
    // The earlier run goes away while its job lives on (as after a console crash and a new run).
    await db
      .update(runs)
      .set({ status: "failed", failureReason: "test: run lost", finishedAt: new Date() })
      .where(eq(runs.id, first));
    const second = await settled(await run(kernelOnly, hostId), 60_000);
    expect(second.failureReason ?? "").toBe("");
    expect(second.status).toBe("succeeded");
    expect(
      Number((await read(node, "var/lib/clupilot/jobs/install-proxmox-kernel/pid")).trim()),
    ).toBe(pid);
    expect(await read(node, "var/lib/clupilot/jobs/install-proxmox-kernel/state")).toBe("ok\n");
    expect(await read(node, "var/lib/dpkg/status")).toContain("Package: proxmox-default-kernel\n");
  }, 120_000);

  it("an apt-get update job left by an earlier run is adopted before any apt source is rewritten", async () => {
    const node = await lab();
    // As an earlier run left it: its update job still running (here one that ends after ten
    // seconds: time for the run to connect and adopt it on a busy machine), while the sources
    // this run would write are not there yet.
    const session = await labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });
    try {
      const started = await session.exec(startJobCommand("apt-update"), {
        stdin: "sleep 10\n",
        timeoutMs: 30_000,
      });
      expect(started.code).toBe(0);
    } finally {
      session.close();
    }
    const hostId = await addHost(node);
    const runId = await run(repositoryOnly, hostId);
    const sources = `etc/apt/sources.list.d/${SOURCES_NAME}`;
    await waitFor(
      "the run to adopt the job",
      async () => (await runLogText(db, runId)).includes("adopting apt-get update") || null,
      30_000,
    );
    // Adopted, and the job still runs: nothing of this run's is written beside it.
    expect(await read(node, "var/lib/clupilot/jobs/apt-update/state")).toBe("running\n");
    await expect(read(node, sources)).rejects.toThrow(/ENOENT/);
    // The adopted job's "ok" is not proof: the goal is judged, and it does not hold.
    const ended = await settled(runId, 60_000);
    expect(ended.status).toBe("failed");
    expect(ended.failureReason).toContain("apt-get update reported success, but");
    await expect(read(node, sources)).rejects.toThrow(/ENOENT/);
    // Retry (a new run) writes the sources and runs its own update.
    const again = await settled(await run(repositoryOnly, hostId), 60_000);
    expect(again.failureReason ?? "").toBe("");
    expect(await read(node, sources)).toContain("Suites: trixie");
  }, 120_000);
});
