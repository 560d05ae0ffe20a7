/**
 * BuildVmTemplate's process semantics, beyond what the original design's mocks could show: the
 * detached driver outlives its SSH channel (lab and real OpenSSH), a reused PID is never
 * signalled, Abort takes the whole process group down, and a worker killed mid-build adopts the
 * live build.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startImageServer, startLab, type ImageServer, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { openSshAvailable, startOpenSshPeer } from "@/lab/openssh/sshd";
import { createDb, type Database } from "@/lib/db/client";
import { readLogTail } from "@/lib/logs/read";
import { ABORT_REASON } from "@/lib/pipeline/engine";
import { abortRun } from "@/lib/runs/abort-run";
import { connectSsh, type SshSession } from "@/lib/ssh";
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
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { buildEnvFile, killBuildCommand, startBuildCommand } from "./commands";
import { DEFAULT_SCRIPTS_DIR, SCRIPTS } from ".";

let db: Database;
let dbUrl: string;
let worker: WorkerHandle | null = null;
let image: ImageServer;
let node: LabNode;
let hostId: string;
let cleanup: () => Promise<void>;
const PIPELINE = "test-build-vm-template";
let pipeline: ReturnType<typeof buildTemplatePipeline>;
const strays: ChildProcess[] = [];

beforeAll(async () => {
  const database = await createTestDatabase();
  dbUrl = database.url;
  const handle = createDb(database.url, 6);
  db = handle.db;
  image = await startImageServer({ imageSizeBytes: 256 * 1024 });
  pipeline = buildTemplatePipeline(PIPELINE, labBuildConfig(image));
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [pipeline.name]: pipeline },
    concurrency: 2,
    pollIntervalMs: 100,
    engine: { backoffSeconds: () => 0.2, maxTransientErrors: 4 },
    log: () => {},
  });
  node = await startLab({ state: "onboarded", storage: "dir", timeScale: 0.01 });
  hostId = await insertOnboardedHost(db, node);
  cleanup = async () => {
    await worker?.stop();
    for (const child of strays) child.kill("SIGKILL");
    await Promise.all([node.stop(), image.stop()]);
    await handle.pool.end();
    await database.drop();
  };
}, 120_000);
afterAll(() => cleanup());

/** The build's folder as the host has it, and where that is in the lab node's root folder. */
const HOST_BUILD_DIR = "/var/lib/clupilot/template-build";
const buildDir = () => path.join(node.root, HOST_BUILD_DIR);
const hostFile = (file: string) =>
  fs.existsSync(path.join(buildDir(), file))
    ? fs.readFileSync(path.join(buildDir(), file), "utf8").trim()
    : null;
const isTemplate = (vmid: number) => {
  const file = path.join(node.root, "etc/pve/nodes", node.name, "qemu-server", `${vmid}.conf`);
  return fs.existsSync(file) && /^template: 1$/m.test(fs.readFileSync(file, "utf8"));
};
const starts = (since: number) =>
  node.commands.slice(since).filter((c) => c.command.includes("nohup setsid"));

/** Live (non-zombie) members of process group `pgid`, with their command lines. */
function groupMembers(pgid: number): string[] {
  const members: string[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) !== pgid || state === "Z" || state === "X") continue;
      members.push(fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      // ended while we looked
    }
  }
  return members;
}

/** Live processes of this lab node (everything in its namespace) whose command line matches. */
function nodeProcesses(pattern: RegExp): string[] {
  const found: string[] = [];
  for (const pid of node.processes()) {
    if (!alive(pid)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      if (pattern.test(cmdline)) found.push(`${pid} ${cmdline}`);
    } catch {
      // ended while we looked
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return !["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]!);
  } catch {
    return false;
  }
}

async function whenPhase(phase: string, timeoutMs = 30_000): Promise<number> {
  await waitFor(`phase ${phase}`, async () => hostFile("phase") === phase, timeoutMs, 50);
  return Number(hostFile("pid"));
}

async function uploadBuild(session: SshSession, vmids: number[]) {
  for (const script of SCRIPTS) {
    await session.upload(
      `${HOST_BUILD_DIR}/${script.name}`,
      fs.readFileSync(path.join(DEFAULT_SCRIPTS_DIR, script.name)),
      { mode: script.mode },
    );
  }
  await session.upload(
    `${HOST_BUILD_DIR}/build.env`,
    buildEnvFile({ vmids, imageUrl: image.imageUrl, sha512sumsUrl: image.sumsUrl }),
  );
}

describe("the driver survives the SSH channel closing", () => {
  it("against the lab: started through real SSH, then the connection is dropped", async () => {
    const session = await labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });
    await uploadBuild(session, [9200]);
    const started = await session.exec(startBuildCommand(HOST_BUILD_DIR));
    const pid = Number(started.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    session.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(alive(pid)).toBe(true);
    await waitFor("the build to finish", async () => hostFile("state") === "ok", 30_000, 100);
    expect(isTemplate(9200)).toBe(true);
  });

  it.runIf(openSshAvailable())(
    "against real OpenSSH: started through real SSH, then the connection is dropped",
    async () => {
      const sshd = await startOpenSshPeer({ node });
      try {
        const session = await connectSsh({
          host: sshd.host,
          port: sshd.port,
          username: sshd.username,
          auth: { kind: "private_key", privateKey: sshd.privateKey },
          pinnedHostKey: sshd.hostKeySha256,
        });
        await uploadBuild(session, [9201]);
        const started = await session.exec(startBuildCommand(HOST_BUILD_DIR));
        const pid = Number(started.stdout.trim());
        expect(pid).toBeGreaterThan(0);
        session.close();
        // sshd tears the session down once the client is gone; the driver must not go with it.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(alive(pid)).toBe(true);
        await waitFor("the build to finish", async () => hostFile("state") === "ok", 30_000, 100);
        expect(isTemplate(9201)).toBe(true);
      } finally {
        await sshd.stop();
      }
    },
  );
});

describe("BuildVmTemplate process semantics", () => {
  it("a pid file naming a live unrelated process (PID reuse) is treated as dead and that process is never signalled", async () => {
    // An unrelated process in its own group, as a reused PID would be.
    const unrelated = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    strays.push(unrelated);
    const pid = unrelated.pid!;
    let signalled: string | null = null;
    unrelated.on("exit", (_code, signal) => (signalled = signal ?? "exit"));
    fs.mkdirSync(buildDir(), { recursive: true });
    fs.writeFileSync(path.join(buildDir(), "state"), "running\n");
    fs.writeFileSync(path.join(buildDir(), "pid"), `${pid}\n`);

    // Giving up on a build whose pid is not our driver signals nothing.
    const session = await labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });
    const kill = await session.exec(killBuildCommand(1));
    session.close();
    expect(kill.stdout.trim()).toBe("not-ours");

    // The step does not adopt it ("running" + a live PID is not a live driver): it starts its own.
    await setCatalog(db, [9202]);
    const since = node.commands.length;
    const done = await settled(db, await startBuildRun(db, pipeline, hostId));
    expect(done.status, done.failureReason ?? "").toBe("succeeded");
    expect(starts(since)).toHaveLength(1);
    expect(Number(hostFile("pid"))).not.toBe(pid);
    expect(alive(pid)).toBe(true);
    expect(signalled).toBeNull();
    unrelated.kill("SIGKILL");
  });

  it("Abort during customise → the abort stops the whole process group (driver and virt-customize), no orphan left", async () => {
    node.setTiming({ timeScale: 0.5 });
    try {
      await setCatalog(db, [9203]);
      const runId = await startBuildRun(db, pipeline, hostId);
      const pid = await whenPhase("customise image");
      await waitFor("virt-customize to run", async () =>
        groupMembers(pid).some((cmd) => cmd.includes("virt-customize")),
      );
      await abortRun(db, { runId, actor: "test" });
      await waitFor("the group to be gone", async () => groupMembers(pid).length === 0, 60_000, 50);
      const done = await settled(db, runId);
      expect(done).toMatchObject({ status: "failed", failureReason: ABORT_REASON });
      // The abort found the build alive and stopped it; it did not end by itself. (How soon
      // after the Abort the group is gone is bench:template's to measure.)
      const notes = (await readLogTail(db, runId, 1000)).map((line) => line.text);
      expect(notes).toContainEqual(
        expect.stringMatching(
          /^template build processes on the host: (terminated|killed after it ignored TERM)$/,
        ),
      );
      expect(["state", "pid", "phase", "note"].map(hostFile)).toEqual([null, null, null, null]);
      // No orphan: nothing the build started is left anywhere (setsid'ed or not).
      expect(nodeProcesses(/virt-customize|template-run\.sh/)).toEqual([]);
      expect(isTemplate(9203)).toBe(false);
    } finally {
      node.setTiming({ timeScale: 0.01 });
    }
  });

  it("worker kill -9 in the middle of a build, worker restarted → the live build is adopted; over the whole test exactly one driver process ever ran", async () => {
    // Only real worker processes from here on.
    await worker?.stop();
    worker = null;
    node.setTiming({ timeScale: 0.25 });
    try {
      await setCatalog(db, [9204]);
      const since = node.commands.length;
      const runId = await startBuildRun(db, pipeline, hostId);
      const first = await spawnBuildWorker();
      const pid = await whenPhase("customise image");
      process.kill(first.pid!, "SIGKILL");
      await new Promise((resolve) => first.once("exit", resolve));
      expect((await runRow(db, runId)).status).toBe("running");
      expect(alive(pid)).toBe(true);

      const second = await spawnBuildWorker();
      const done = await settled(db, runId, 60_000);
      second.kill("SIGTERM");
      expect(done.status, done.failureReason ?? "").toBe("succeeded");
      expect(starts(since)).toHaveLength(1);
      expect(Number(hostFile("pid"))).toBe(pid);
      const log = fs.readFileSync(path.join(buildDir(), "build.log"), "utf8");
      expect(log.match(/^.* building templates /gm)).toHaveLength(1);
      expect(isTemplate(9204)).toBe(true);
    } finally {
      node.setTiming({ timeScale: 0.01 });
    }
  }, 90_000);
});

async function spawnBuildWorker(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/fixtures/build-vm-template-worker.ts"],
    {
      cwd: path.resolve(import.meta.dirname, "../../../.."),
      env: {
        ...process.env,
        DATABASE_URL: dbUrl,
        BVT_PIPELINE: PIPELINE,
        BVT_IMAGE_URL: image.imageUrl,
        BVT_SUMS_URL: image.sumsUrl,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  strays.push(child);
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  await waitFor(`the worker to start:\n${output}`, async () => /ready \d+/.test(output), 30_000);
  return child;
}
