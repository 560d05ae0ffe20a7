/**
 * BuildVmTemplate against lab nodes over real SSH, with the real scripts, real processes and
 * the lab's Proxmox API. Test names follow issue 4's list (the original design's list, then
 * "beyond"; the tables in docs/build-vm-template.md).
 * Lab nodes are shared: each test requires its own VMIDs, so one node carries many builds.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startImageServer, startLab, type ImageServer, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { createDb, type Database } from "@/lib/db/client";
import { stepVisits } from "@/lib/db/schema";
import { retryRun } from "@/lib/runs/retry-run";
import { sh } from "@/lib/ssh";
import { createTestDatabase } from "@/test/db";
import {
  buildTemplatePipeline,
  insertOnboardedHost,
  labBuildConfig,
  runRow,
  setCatalog,
  settled,
  startBuildRun,
} from "@/test/fixtures/build-vm-template";
import { runLogText } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { buildEnvFile, startBuildCommand } from "./commands";
import { BUILD_VM_TEMPLATE, DEADLINE_KEY, DEFAULT_SCRIPTS_DIR, SCRIPTS } from ".";

let db: Database;
let worker: WorkerHandle;
let image: ImageServer;
let cleanup: () => Promise<void>;
let config: ReturnType<typeof labBuildConfig>;
let pipeline: ReturnType<typeof buildTemplatePipeline>;
let brokenDriver: ReturnType<typeof buildTemplatePipeline>;

/** dir-no-images, shared by most tests. */
let nodeA: LabNode;
let hostA: string;
/** lvm-thin with template 9000 standing. */
let nodeB: LabNode;
let hostB: string;

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-bvt-"));

beforeAll(async () => {
  const database = await createTestDatabase();
  const handle = createDb(database.url, 6);
  db = handle.db;
  image = await startImageServer({ imageSizeBytes: 256 * 1024 });
  config = labBuildConfig(image);
  pipeline = buildTemplatePipeline("test-build-vm-template", config);
  // A driver that writes its pid and dies before it writes any state: the start "did not take".
  const brokenDir = path.join(scratch, "broken");
  fs.mkdirSync(brokenDir);
  fs.copyFileSync(
    path.join(DEFAULT_SCRIPTS_DIR, "template.sh"),
    path.join(brokenDir, "template.sh"),
  );
  fs.writeFileSync(
    path.join(brokenDir, "template-run.sh"),
    '#!/bin/bash\nd=/var/lib/clupilot/template-build\necho "$$" > "$d/pid"\nexit 1\n',
  );
  brokenDriver = buildTemplatePipeline("test-build-vm-template-broken", config, {
    scriptsDir: brokenDir,
  });
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [pipeline.name]: pipeline, [brokenDriver.name]: brokenDriver },
    concurrency: 2,
    pollIntervalMs: 100,
    engine: { backoffSeconds: () => 0.2, maxTransientErrors: 6 },
    log: () => {},
  });
  [nodeA, nodeB] = await Promise.all([
    startLab({ state: "onboarded", storage: "dir-no-images", timeScale: 0.01 }),
    startLab({
      state: "onboarded",
      storage: "lvm-thin",
      timeScale: 0.01,
      pve: { templates: [9000] },
    }),
  ]);
  hostA = await insertOnboardedHost(db, nodeA);
  hostB = await insertOnboardedHost(db, nodeB);
  cleanup = async () => {
    await worker.stop();
    await Promise.all([nodeA.stop(), nodeB.stop(), image.stop()]);
    await handle.pool.end();
    await database.drop();
    fs.rmSync(scratch, { recursive: true, force: true });
  };
}, 120_000);
afterAll(() => cleanup());

// ── helpers ───────────────────────────────────────────────────────────────────────────────

/** The build's folder as the host has it, and where that is in a lab node's root folder. */
const HOST_BUILD_DIR = "/var/lib/clupilot/template-build";
const buildDir = (node: LabNode) => path.join(node.root, HOST_BUILD_DIR);
const statusFiles = (node: LabNode) =>
  ["state", "pid", "phase", "note"].filter((f) => fs.existsSync(path.join(buildDir(node), f)));
const readHostFile = (node: LabNode, file: string) =>
  fs.readFileSync(path.join(buildDir(node), file), "utf8");
const vmConf = (node: LabNode, vmid: number) => {
  const file = path.join(node.root, "etc/pve/nodes", node.name, "qemu-server", `${vmid}.conf`);
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
};
const starts = (node: LabNode, since = 0) =>
  node.commands.slice(since).filter((c) => c.command.includes("nohup setsid"));
const uploads = (node: LabNode, since = 0) =>
  node.commands.slice(since).filter((c) => c.command.includes("clupilot-tmp"));

const ssh = (node: LabNode) => labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });

async function run(hostId: string, vmids: number[] | null, p = pipeline) {
  await setCatalog(db, vmids);
  return startBuildRun(db, p, hostId);
}

async function visits(runId: string) {
  return db
    .select()
    .from(stepVisits)
    .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, BUILD_VM_TEMPLATE)))
    .orderBy(asc(stepVisits.id));
}

/** `qm create` options carrying the marker template.sh writes (read from the script itself). */
function consoleMarker(): string {
  const script = fs.readFileSync(path.join(DEFAULT_SCRIPTS_DIR, "template.sh"), "utf8");
  const value = (name: string) => script.match(new RegExp(`^${name}="([^"]*)"$`, "m"))![1]!;
  return sh`--tags ${value("CLUPILOT_VM_TAG")} --description ${value("CLUPILOT_VM_DESCRIPTION")}`;
}

/** Waits for the driver of the current build to report `phase`; returns its pid. */
async function whenPhase(node: LabNode, phase: string, timeoutMs = 30_000): Promise<number> {
  await waitFor(
    `phase ${phase}`,
    async () => statusFiles(node).includes("phase") && readHostFile(node, "phase").trim() === phase,
    timeoutMs,
    50,
  );
  return Number(readHostFile(node, "pid").trim());
}

/** True while any non-zombie process is in process group `pgid`. */
function groupAlive(pgid: number): boolean {
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pgid && state !== "Z" && state !== "X") return true;
    } catch {
      // the process ended while we looked
    }
  }
  return false;
}

/** Starts the driver by hand, as an earlier run would have left it running. */
async function startByHand(node: LabNode, vmids: number[]) {
  const session = await ssh(node);
  try {
    const dir = HOST_BUILD_DIR;
    for (const script of SCRIPTS) {
      await session.upload(
        `${dir}/${script.name}`,
        fs.readFileSync(path.join(DEFAULT_SCRIPTS_DIR, script.name)),
        { mode: script.mode },
      );
    }
    await session.upload(
      `${dir}/build.env`,
      buildEnvFile({ vmids, imageUrl: image.imageUrl, sha512sumsUrl: image.sumsUrl }),
    );
    const started = await session.exec(startBuildCommand(dir));
    expect(started.stdout.trim()).toMatch(/^\d+$/);
    return Number(started.stdout.trim());
  } finally {
    session.close();
  }
}

// ── the original design's list ────────────────────────────────────────────────────────────

describe("BuildVmTemplate (the original design's list)", () => {
  it("no published catalog → advance, nothing uploaded", async () => {
    const since = nodeA.commands.length;
    const done = await settled(db, await run(hostA, null));
    expect(done.status).toBe("succeeded");
    expect(uploads(nodeA, since)).toEqual([]);
    expect(starts(nodeA, since)).toEqual([]);
    // ConnectHost's probe is the only command the run sent.
    expect(nodeA.commands.length - since).toBe(1);
  });

  it("required template already a real template → advance, no start", async () => {
    const before = vmConf(nodeB, 9000);
    expect(before).toMatch(/^template: 1$/m);
    const since = nodeB.commands.length;
    const done = await settled(db, await run(hostB, [9000]));
    expect(done.status).toBe("succeeded");
    expect(starts(nodeB, since)).toEqual([]);
    expect(uploads(nodeB, since)).toEqual([]);
    expect(vmConf(nodeB, 9000)).toBe(before);
  });

  it("VM 9000 exists but is not a template, a leftover the console made (its name and marker) → it is built", async () => {
    const session = await ssh(nodeA);
    const leftover = await session.exec(
      `qm create 9000 --name clupilot-debian-13-9000 --memory 512 ${consoleMarker()}`,
    );
    expect(leftover.code, leftover.stderr).toBe(0);
    session.close();
    expect(vmConf(nodeA, 9000)).not.toMatch(/^template: 1$/m);
    const runId = await run(hostA, [9000]);
    const done = await settled(db, runId);
    expect(done.status, done.failureReason ?? "").toBe("succeeded");
    expect(vmConf(nodeA, 9000)).toMatch(/^template: 1$/m);
    expect(vmConf(nodeA, 9000)).toMatch(/^scsi0: local:9000\/base-9000-disk-0\.raw/m);
    // The build.log came into the run log, including the leftover's removal.
    expect(await runLogText(db, runId)).toContain(
      "VM 9000 is a leftover of an earlier build by the console",
    );
  });

  it("first visit uploads the scripts byte for byte (SHA-256 on the host equals the repo files) and starts detached → poll", async () => {
    const since = nodeA.commands.length;
    const runId = await run(hostA, [9001]);
    const first = await waitFor(
      "the first BuildVmTemplate visit",
      async () => (await visits(runId))[0],
    );
    expect(first).toMatchObject({ visit: 1, outcome: "poll" });
    expect(starts(nodeA, since)).toHaveLength(1);
    // Detached: the driver leads its own session and process group (setsid), so neither the
    // channel closing nor the start command's group takes it down.
    const pid = Number(readHostFile(nodeA, "pid").trim());
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const [, , pgrp, session_] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    expect([Number(pgrp), Number(session_)]).toEqual([pid, pid]);
    const session = await ssh(nodeA);
    for (const script of SCRIPTS) {
      const local = createHash("sha256")
        .update(fs.readFileSync(path.join(DEFAULT_SCRIPTS_DIR, script.name)))
        .digest("hex");
      const remote = await session.exec(`sha256sum ${HOST_BUILD_DIR}/${script.name}`);
      expect(remote.stdout.split(" ")[0]).toBe(local);
    }
    session.close();
    const done = await settled(db, runId);
    expect(done.status, done.failureReason ?? "").toBe("succeeded");
    expect(await runLogText(db, runId)).toMatch(/started \(driver pid \d+, detached\)/);
    // The step advances once Proxmox reports the template; the driver ends on its own.
    await waitFor("the driver to end", async () => readHostFile(nodeA, "state").trim() === "ok");
  });

  it("two templates required, one stands → only the missing VMID is in the env file", async () => {
    const standing = vmConf(nodeA, 9001);
    expect(standing).toMatch(/^template: 1$/m);
    const done = await settled(db, await run(hostA, [9001, 9002]));
    expect(done.status, done.failureReason ?? "").toBe("succeeded");
    expect(readHostFile(nodeA, "build.env")).toMatch(/^TEMPLATE_VMIDS='9002'$/m);
    expect(readHostFile(nodeA, "build.env")).not.toContain("9001");
    expect(vmConf(nodeA, 9001)).toBe(standing);
    expect(vmConf(nodeA, 9002)).toMatch(/^template: 1$/m);
  });

  it("running + live process → poll, no second start", async () => {
    nodeA.setTiming({ timeScale: 0.12 });
    try {
      const since = nodeA.commands.length;
      const runId = await run(hostA, [9003]);
      await whenPhase(nodeA, "customise image");
      // The phase line shows the driver's phase while the step polls the live driver.
      await waitFor(
        "the phase line",
        async () => (await runRow(db, runId)).phase === "customise image",
      );
      const polled = (await visits(runId)).filter((v) => v.outcome === "poll").length;
      await waitFor("two more polls of the running build", async () => {
        const polls = (await visits(runId)).filter((v) => v.outcome === "poll");
        return polls.length >= polled + 2;
      });
      expect(starts(nodeA, since)).toHaveLength(1);
      const done = await settled(db, runId);
      expect(done.status, done.failureReason ?? "").toBe("succeeded");
      expect(starts(nodeA, since)).toHaveLength(1);
    } finally {
      nodeA.setTiming({ timeScale: 0.01 });
    }
  });

  it("running + dead process → fail, not poll", async () => {
    nodeA.setTiming({ timeScale: 0.12 });
    try {
      const runId = await run(hostA, [9004]);
      const pid = await whenPhase(nodeA, "customise image");
      // The whole build dies at once (as in a host crash): no trap runs, state stays "running".
      process.kill(-pid, "SIGKILL");
      const done = await settled(db, runId);
      expect(done.status).toBe("failed");
      expect(done.failureReason).toMatch(/died during customise image without reporting a result/);
      expect(statusFiles(nodeA)).toEqual([]);
    } finally {
      nodeA.setTiming({ timeScale: 0.01 });
    }
  });

  it("failed → fail with the note's reason; state files removed", async () => {
    image.faults.checksumMismatch = true;
    try {
      const runId = await run(hostA, [9005]);
      const done = await settled(db, runId);
      expect(done.status).toBe("failed");
      expect(done.failureReason).toMatch(
        /^template build failed: checksum mismatch for debian-13-genericcloud-amd64\.qcow2: SHA512SUMS says [0-9a-f]{16}…, the download has [0-9a-f]{16}…; nothing was kept\. Retry starts a new build/,
      );
      expect(statusFiles(nodeA)).toEqual([]);
      // The last lines of build.log are in the run's log.
      expect(await runLogText(db, runId)).toContain("FAILED: checksum mismatch");
    } finally {
      image.faults.checksumMismatch = false;
    }
  });

  it("ok but template: 1 missing → fail", async () => {
    nodeA.setTiming({ timeScale: 0.08 });
    try {
      // A build left running by an earlier run builds 9006; this run requires 9007. It adopts
      // the live build, which ends ok — but Proxmox does not report 9007 as a template.
      await startByHand(nodeA, [9006]);
      const since = nodeA.commands.length;
      const done = await settled(db, await run(hostA, [9007]));
      expect(done.status).toBe("failed");
      expect(done.failureReason).toMatch(
        /^the template build reported success, but Proxmox does not report every required VMID as a template/,
      );
      expect(starts(nodeA, since)).toEqual([]);
      expect(vmConf(nodeA, 9007)).toBeNull();
    } finally {
      nodeA.setTiming({ timeScale: 0.01 });
    }
  });

  it("deadline passed → fail, and the process group is gone", async () => {
    nodeA.setTiming({ timeScale: 0.2 });
    config.templateBuildDeadlineSeconds = 2;
    try {
      const runId = await run(hostA, [9008]);
      const pid = await whenPhase(nodeA, "customise image");
      expect(groupAlive(pid)).toBe(true);
      const done = await settled(db, runId);
      expect(done.status).toBe("failed");
      expect(done.failureReason).toMatch(
        /^the template build did not finish within 2 s \(last phase: customise image\); it was stopped\. Retry/,
      );
      expect(await runLogText(db, runId)).toContain(
        "template build processes on the host: terminated",
      );
      expect(groupAlive(pid)).toBe(false);
      expect(statusFiles(nodeA)).toEqual([]);
    } finally {
      config.templateBuildDeadlineSeconds = 300;
      nodeA.setTiming({ timeScale: 0.01 });
    }
  });

  it("start left no status → fail, not an endless restart loop", async () => {
    const since = nodeA.commands.length;
    const done = await settled(db, await run(hostA, [9009], brokenDriver));
    expect(done.status).toBe("failed");
    expect(done.failureReason).toMatch(/^the template build did not start on the host/);
    expect(starts(nodeA, since)).toHaveLength(1);
  });

  it("after a fail the deadline is gone, so Retry really starts anew", async () => {
    image.faults.checksumMismatch = true;
    const since = nodeA.commands.length;
    const runId = await run(hostA, [9010]);
    const failed = await settled(db, runId);
    image.faults.checksumMismatch = false;
    expect(failed.status).toBe("failed");
    expect(failed.context).not.toHaveProperty(DEADLINE_KEY);
    await retryRun(db, { runId, actor: "test" });
    const done = await settled(db, runId);
    expect(done.status, done.failureReason ?? "").toBe("succeeded");
    expect(starts(nodeA, since)).toHaveLength(2);
    expect(vmConf(nodeA, 9010)).toMatch(/^template: 1$/m);
  });

  it("status from an earlier run: ok → build again; live running → adopt, don't start beside it", async () => {
    // ok from the previous test's build: it answers no question this run asks.
    expect(readHostFile(nodeA, "state").trim()).toBe("ok");
    let since = nodeA.commands.length;
    const again = await settled(db, await run(hostA, [9011]));
    expect(again.status, again.failureReason ?? "").toBe("succeeded");
    expect(starts(nodeA, since)).toHaveLength(1);

    nodeA.setTiming({ timeScale: 0.08 });
    try {
      const pid = await startByHand(nodeA, [9012]);
      since = nodeA.commands.length;
      const runId = await run(hostA, [9012]);
      const adopted = await settled(db, runId);
      expect(adopted.status, adopted.failureReason ?? "").toBe("succeeded");
      expect(starts(nodeA, since)).toEqual([]);
      expect(await runLogText(db, runId)).toContain("adopting it instead of starting a second one");
      expect(readHostFile(nodeA, "pid").trim()).toBe(String(pid));
      expect(vmConf(nodeA, 9012)).toMatch(/^template: 1$/m);
    } finally {
      nodeA.setTiming({ timeScale: 0.01 });
    }
  });
});

// ── beyond the original design ────────────────────────────────────────────────────────────

describe("BuildVmTemplate (beyond the original design)", () => {
  it("the VM list flapping (502, timeout) while a template stands → the template is never destroyed", async () => {
    const before = vmConf(nodeB, 9000);
    const since = nodeB.commands.length;
    nodeB.api.faults.vmList502 = true;
    try {
      const runId = await run(hostB, [9000]);
      await waitFor(
        "two failed visits on 502",
        async () => (await runRow(db, runId)).errorCount >= 2,
      );
      nodeB.api.faults.vmList502 = false;
      nodeB.api.faults.vmListHang = true;
      await waitFor(
        "a failed visit on a hanging VM list",
        async () => (await runRow(db, runId)).errorCount >= 3,
        40_000,
      );
      nodeB.api.faults.vmListHang = false;
      const done = await settled(db, runId);
      expect(done.status, done.failureReason ?? "").toBe("succeeded");
      expect(vmConf(nodeB, 9000)).toBe(before);
      expect(starts(nodeB, since)).toEqual([]);
      expect(uploads(nodeB, since)).toEqual([]);
      expect(nodeB.commands.slice(since).some((c) => /qm (destroy|create)/.test(c.command))).toBe(
        false,
      );
    } finally {
      nodeB.api.faults.vmList502 = false;
      nodeB.api.faults.vmListHang = false;
    }
  }, 90_000);

  it("checksum mismatch and cut-off download → fail with a clear note, no .part mistaken for a finished image; a rerun reuses a verified image without downloading it again", async () => {
    const images = path.join(nodeA.root, "var/lib/clupilot/images");
    fs.rmSync(images, { recursive: true, force: true });
    const imageFile = path.join(images, "debian-13-genericcloud-amd64.qcow2");

    image.faults.cutOffAfterBytes = 100 * 1024;
    const cut = await settled(db, await run(hostA, [9013]));
    image.faults.cutOffAfterBytes = null;
    expect(cut.status).toBe("failed");
    expect(cut.failureReason).toMatch(
      /download of .*debian-13-genericcloud-amd64\.qcow2 was cut off or failed; nothing was kept/,
    );
    expect(fs.readdirSync(images)).toEqual([]);

    // A .part left by something else is never taken for the image: it is downloaded anew.
    fs.writeFileSync(`${imageFile}.part`, "half an image");
    image.faults.checksumMismatch = true;
    const mismatch = await settled(db, await run(hostA, [9013]));
    image.faults.checksumMismatch = false;
    expect(mismatch.status).toBe("failed");
    expect(mismatch.failureReason).toMatch(/checksum mismatch/);
    expect(fs.readdirSync(images)).toEqual([]);

    const built = await settled(db, await run(hostA, [9013]));
    expect(built.status, built.failureReason ?? "").toBe("succeeded");
    expect(fs.readFileSync(imageFile).equals(image.imageBytes)).toBe(true);

    const requestsBefore = image.requests.length;
    const reused = await settled(db, await run(hostA, [9014]));
    expect(reused.status, reused.failureReason ?? "").toBe("succeeded");
    const newRequests = image.requests.slice(requestsBefore).map((r) => r.path);
    expect(newRequests.some((p) => p.endsWith(".qcow2"))).toBe(false);
    expect(newRequests.some((p) => p.endsWith("SHA512SUMS"))).toBe(true);
  });

  it('virt-customize "succeeds" without installing → verify_image_contents fails naming the missing package', async () => {
    nodeA.setDebianFaults({ virtCustomizeSkipsInstall: true });
    try {
      const done = await settled(db, await run(hostA, [9015]));
      expect(done.status).toBe("failed");
      expect(done.failureReason).toMatch(
        /qemu-guest-agent is not installed in the customised image although virt-customize reported success/,
      );
      expect(vmConf(nodeA, 9015)).toBeNull();
    } finally {
      nodeA.setDebianFaults({ virtCustomizeSkipsInstall: false });
    }
  });

  describe("storage", () => {
    let nodeD: LabNode;
    let hostD: string;
    beforeAll(async () => {
      nodeD = await startLab({ state: "onboarded", storage: "dir-no-images", timeScale: 0.01 });
      hostD = await insertOnboardedHost(db, nodeD);
    });
    afterAll(() => nodeD.stop());

    it("disk too small → refused with both figures before anything is downloaded", async () => {
      nodeD.setDebianFaults({ diskAvailableKb: 1024 });
      const requestsBefore = image.requests.length;
      try {
        const done = await settled(db, await run(hostD, [9000]));
        expect(done.status).toBe("failed");
        expect(done.failureReason).toMatch(
          /^template build failed: only 1 MiB free in .*\/var\/lib\/clupilot\/images; the build needs \d+ MiB there \(image \d+ MiB × 2 \+ 1024 MiB headroom\)/,
        );
        // The image's size was asked (HEAD), nothing was downloaded.
        const requests = image.requests.slice(requestsBefore);
        expect(requests.map((r) => r.method)).toEqual(["HEAD"]);
        const images = path.join(nodeD.root, "var/lib/clupilot/images");
        expect(fs.existsSync(images) ? fs.readdirSync(images) : []).toEqual([]);
      } finally {
        nodeD.setDebianFaults({ diskAvailableKb: null });
      }
    });

    it("directory storage without images → pvesm set appends images keeping every other content type; local-lvm hosts untouched; the template's disk has the name Proxmox gives it", async () => {
      // An operator's storage.cfg: comments, options, a disabled storage, NFS; local has no images.
      const cfgPath = path.join(nodeD.root, "etc/pve/storage.cfg");
      const operators = fs.readFileSync(
        path.resolve(
          import.meta.dirname,
          "../../../../test/fixtures/proxmox/storage-cfg/debian-install-customised.cfg",
        ),
        "utf8",
      );
      fs.writeFileSync(cfgPath, operators);
      const done = await settled(db, await run(hostD, [9000]));
      expect(done.status, done.failureReason ?? "").toBe("succeeded");
      const after = fs.readFileSync(cfgPath, "utf8");
      const contentOf = (text: string) =>
        /^dir: local\n(?:\t.*\n)*?\tcontent (.*)$/m.exec(text)?.[1];
      expect(contentOf(operators)).toBe("snippets,iso,vztmpl,backup");
      expect(contentOf(after)).toBe("snippets,iso,vztmpl,backup,images");
      // Nothing else changed: same lines apart from local's content line.
      const diff = (a: string, b: string) => {
        const left = a.split("\n");
        const right = b.split("\n");
        return left.filter((line, i) => line !== right[i]);
      };
      expect(after.split("\n")).toHaveLength(operators.split("\n").length);
      expect(diff(operators, after)).toEqual(["\tcontent snippets,iso,vztmpl,backup"]);
      expect(vmConf(nodeD, 9000)).toMatch(/^scsi0: local:9000\/base-9000-disk-0\.raw,size=/m);

      // local-lvm: the build uses it and leaves storage.cfg byte for byte as it was.
      const lvmCfg = path.join(nodeB.root, "etc/pve/storage.cfg");
      const lvmBefore = fs.readFileSync(lvmCfg, "utf8");
      const lvm = await settled(db, await run(hostB, [9100]));
      expect(lvm.status, lvm.failureReason ?? "").toBe("succeeded");
      expect(fs.readFileSync(lvmCfg, "utf8")).toBe(lvmBefore);
      expect(vmConf(nodeB, 9100)).toMatch(/^scsi0: local-lvm:base-9100-disk-0,size=/m);
    });
  });
});
