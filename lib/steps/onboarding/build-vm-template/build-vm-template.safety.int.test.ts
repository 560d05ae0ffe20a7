/**
 * BuildVmTemplate's safety rules (issue 17, items 3–6; issue 19, point 8) against a lab node
 * over real SSH, with the real scripts and real processes: a VM the console did not make is
 * never destroyed, never two drivers, every failure kills the build's processes, space is sized
 * to the build, and the phase line is never older than the log.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startImageServer, startLab, type ImageServer, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { createDb, type Database } from "@/lib/db/client";
import { stepVisits } from "@/lib/db/schema";
import { definePipeline } from "@/lib/pipeline/step";
import { abortRun } from "@/lib/runs/abort-run";
import { retryRun } from "@/lib/runs/retry-run";
import type { SshSession } from "@/lib/ssh";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import type { OnboardingConfig } from "@/lib/steps/onboarding/config";
import { createHostServices, type HostServices } from "@/lib/steps/onboarding/services";
import { createTestDatabase } from "@/test/db";
import {
  insertOnboardedHost,
  labBuildConfig,
  setCatalog,
  settled,
  startBuildRun,
} from "@/test/fixtures/build-vm-template";
import { runLogText } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { buildEnvFile, START_REFUSED_EXIT, startBuildCommand } from "./commands";
import {
  BUILD_VM_TEMPLATE,
  buildVmTemplate,
  DEFAULT_SCRIPTS_DIR,
  SCRIPTS,
  type BuildVmTemplateOptions,
} from ".";

let db: Database;
let worker: WorkerHandle;
let image: ImageServer;
let node: LabNode;
let hostId: string;
let cleanup: () => Promise<void>;
const strays: ChildProcess[] = [];

/** Plain pipeline: the real step, short polls. */
let plain: ReturnType<typeof pipelineWith>;
/** maxDuration 10 s, and one stalled SSH read during customise (a slow host). */
let slow: ReturnType<typeof pipelineWith>;
const stall = { armed: false, release: () => {} };
/** Each log read first moves a stand-in driver one phase on (a driver racing the reads). */
let racing: ReturnType<typeof pipelineWith>;
const race = { active: false, markers: [] as string[] };

/**
 * The real steps with a hook on the step's own SSH reads (status, watch, log tail): what a slow
 * host or a driver moving on between two reads looks like, placed exactly.
 */
function pipelineWith(
  name: string,
  config: OnboardingConfig,
  options: BuildVmTemplateOptions,
  beforeExec: (command: string) => Promise<void> = async () => {},
) {
  return definePipeline<HostServices>({
    name,
    steps: [connectHost, buildVmTemplate(config, options)],
    services: (run, database) => {
      const made = createHostServices(database, run, config);
      const ssh = async (): Promise<SshSession> => {
        const session = await made.services.ssh();
        return new Proxy(session, {
          get(target, prop) {
            if (prop === "exec") {
              return async (...args: Parameters<SshSession["exec"]>) => {
                await beforeExec(args[0]);
                return target.exec(...args);
              };
            }
            const value: unknown = Reflect.get(target, prop, target);
            return typeof value === "function" ? value.bind(target) : value;
          },
        });
      };
      return { services: { ...made.services, ssh }, dispose: made.dispose };
    },
  });
}

/** The log tail's shell side opens the file on fd 3 (lib/logs/tail-remote-file.ts). */
const isLogTail = (command: string) => command.includes("exec 3<");

beforeAll(async () => {
  const database = await createTestDatabase();
  const handle = createDb(database.url, 6);
  db = handle.db;
  image = await startImageServer({ imageSizeBytes: 256 * 1024 });
  const config = labBuildConfig(image);
  plain = pipelineWith("test-bvt-safety", config, {});
  slow = pipelineWith("test-bvt-safety-slow", config, { maxDurationSeconds: 10 }, async (c) => {
    if (!stall.armed || !isLogTail(c) || hostFile("phase") !== "customise image") return;
    stall.armed = false;
    await new Promise<void>((resolve) => (stall.release = resolve));
  });
  racing = pipelineWith("test-bvt-safety-race", config, {}, async (c) => {
    if (!race.active || !isLogTail(c)) return;
    const marker = `step ${race.markers.length + 1}`;
    race.markers.push(marker);
    // As the driver does: the phase file first, then the log line.
    fs.writeFileSync(path.join(buildDir(), "phase"), `${marker}\n`);
    fs.appendFileSync(path.join(buildDir(), "build.log"), `12:00:00 == ${marker}\n`);
  });
  worker = await startWorker({
    connectionString: database.url,
    pipelines: { [plain.name]: plain, [slow.name]: slow, [racing.name]: racing },
    concurrency: 2,
    pollIntervalMs: 100,
    engine: { backoffSeconds: () => 0.2, maxTransientErrors: 4 },
    log: () => {},
  });
  node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  hostId = await insertOnboardedHost(db, node);
  cleanup = async () => {
    stall.release();
    await worker.stop();
    for (const child of strays) child.kill("SIGKILL");
    await Promise.all([node.stop(), image.stop()]);
    await handle.pool.end();
    await database.drop();
  };
}, 120_000);
afterAll(() => cleanup());

// ── helpers ───────────────────────────────────────────────────────────────────────────────

/** The build's folder as the host has it, and where that is in the lab node's root folder. */
const HOST_BUILD_DIR = "/var/lib/clupilot/template-build";
const buildDir = () => path.join(node.root, HOST_BUILD_DIR);
const hostFile = (file: string) => {
  const p = path.join(buildDir(), file);
  return fs.existsSync(p) ? fs.readFileSync(p, "utf8").trim() : null;
};
const statusFiles = () =>
  ["state", "pid", "phase", "note"].filter((f) => fs.existsSync(path.join(buildDir(), f)));
const vmConf = (vmid: number) => {
  const file = path.join(node.root, "etc/pve/nodes", node.name, "qemu-server", `${vmid}.conf`);
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
};
const starts = (since: number) =>
  node.commands.slice(since).filter((c) => c.command.includes("nohup setsid"));
const ssh = () => labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });

async function run(vmids: number[], pipeline = plain) {
  await setCatalog(db, vmids);
  return startBuildRun(db, pipeline, hostId);
}

async function pollDetails(runId: string): Promise<string[]> {
  const rows = await db
    .select()
    .from(stepVisits)
    .where(and(eq(stepVisits.runId, runId), eq(stepVisits.step, BUILD_VM_TEMPLATE)))
    .orderBy(asc(stepVisits.id));
  return rows.filter((v) => v.outcome === "poll").map((v) => v.detail ?? "");
}

async function whenPhase(phase: string, timeoutMs = 30_000): Promise<number> {
  await waitFor(`phase ${phase}`, async () => hostFile("phase") === phase, timeoutMs, 50);
  return Number(hostFile("pid"));
}

function stat(pid: string): string[] | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** Live (non-zombie) processes of session `sid`, with their command lines. */
function sessionMembers(sid: number): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = stat(entry);
    if (!fields || Number(fields[3]) !== sid || ["Z", "X"].includes(fields[0]!)) continue;
    try {
      found.push(fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " "));
    } catch {
      // ended while we looked
    }
  }
  return found;
}

/**
 * Live drivers of this lab node's build dir: session leaders running it (the driver's own
 * `$(…)` subshells are forks with the same command line, but not session leaders).
 */
function drivers(): number[] {
  const driver = `${HOST_BUILD_DIR}/template-run.sh`;
  const found: number[] = [];
  for (const entry of node.processes().map(String)) {
    const fields = stat(entry);
    if (!fields || ["Z", "X"].includes(fields[0]!) || fields[3] !== entry) continue;
    try {
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (argv[0] === "bash" && argv[1] === driver) found.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return found;
}

/** Uploads the real scripts and starts the driver by hand, as an earlier run would have. */
async function startByHand(vmids: number[]): Promise<number> {
  const session = await ssh();
  try {
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
    const started = await session.exec(startBuildCommand(HOST_BUILD_DIR));
    expect(started.stdout.trim()).toMatch(/^\d+$/);
    return Number(started.stdout.trim());
  } finally {
    session.close();
  }
}

// ── the tests ─────────────────────────────────────────────────────────────────────────────

describe("BuildVmTemplate never destroys what it did not make", () => {
  it("a VM the console did not create at a required VMID (another name; or our name without the console's marker) → untouched, the step fails naming it", async () => {
    const session = await ssh();
    for (const create of [
      "qm create 9000 --name customer-db --memory 4096 --tags prod",
      "qm create 9001 --name clupilot-debian-13-9001 --memory 512",
    ]) {
      const made = await session.exec(create);
      expect(made.code, made.stderr).toBe(0);
    }
    session.close();
    const before = [vmConf(9000), vmConf(9001)];

    const customers = await settled(db, await run([9000]));
    expect(customers.status).toBe("failed");
    expect(customers.failureReason).toMatch(
      /^template build failed: VMID 9000 holds a VM the console did not create \(name customer-db\): move it or choose another VMID\./,
    );
    const lookalike = await settled(db, await run([9001]));
    expect(lookalike.failureReason, await runLogText(db, lookalike.id)).toMatch(
      /^template build failed: VMID 9001 holds a VM the console did not create \(name clupilot-debian-13-9001\): move it or choose another VMID\./,
    );
    expect([vmConf(9000), vmConf(9001)]).toEqual(before);
  });
});

describe("BuildVmTemplate never runs two drivers", () => {
  it("a live driver whose state and pid files were deleted, then Retry → the live driver is adopted; a second start is refused; one driver over the whole test", async () => {
    // A run that failed at BuildVmTemplate, to retry.
    image.faults.checksumMismatch = true;
    const runId = await run([9010]);
    const failed = await settled(db, runId);
    image.faults.checksumMismatch = false;
    expect(failed.status).toBe("failed");

    // Slow enough that customising outlasts the test's own steps on a loaded machine (~14 s).
    node.setTiming({ timeScale: 0.4 });
    let most = 0;
    let sampler: NodeJS.Timeout | undefined;
    try {
      const pid = await startByHand([9010]);
      await whenPhase("customise image");
      fs.rmSync(path.join(buildDir(), "state"));
      fs.rmSync(path.join(buildDir(), "pid"));

      // Whatever the status files say, the lock refuses a second driver: the start command,
      // and the driver itself started directly — neither touches a status file.
      const session = await ssh();
      const second = await session.exec(startBuildCommand(HOST_BUILD_DIR));
      expect(second.code).toBe(START_REFUSED_EXIT);
      expect(second.stderr).toContain(`a template build driver (pid ${pid}) holds`);
      const direct = await session.exec(
        `bash ${HOST_BUILD_DIR}/template-run.sh ${HOST_BUILD_DIR}/build.env`,
      );
      expect(direct.code).toBe(START_REFUSED_EXIT);
      session.close();
      expect(statusFiles()).toEqual(["phase"]);

      // From here on, exactly one driver process may live at any time.
      sampler = setInterval(() => (most = Math.max(most, drivers().length)), 25);
      const since = node.commands.length;
      await retryRun(db, { runId, actor: "test" });
      const done = await settled(db, runId, 90_000);
      expect(done.status, done.failureReason ?? "").toBe("succeeded");
      expect(starts(since)).toEqual([]);
      expect(await runLogText(db, runId)).toContain("state file: missing); adopting it");
      expect(vmConf(9010)).toMatch(/^template: 1$/m);
      expect(most).toBe(1);
      const log = fs.readFileSync(path.join(buildDir(), "build.log"), "utf8");
      expect(log.match(/ building templates /g)).toHaveLength(1);
    } finally {
      clearInterval(sampler);
      node.setTiming({ timeScale: 0.01 });
    }
  }, 120_000);
});

describe("BuildVmTemplate cleans up every failure", () => {
  it("maxDuration hit during customise (a stalled read) → the run fails and no process of the build's session is left", async () => {
    node.setTiming({ timeScale: 0.5 });
    stall.armed = true;
    try {
      const runId = await run([9020], slow);
      const pid = await whenPhase("customise image");
      await waitFor("virt-customize to run", async () =>
        sessionMembers(pid).some((cmd) => cmd.includes("virt-customize")),
      );
      const done = await settled(db, runId, 60_000);
      expect(done.status).toBe("failed");
      expect(done.failureReason).toMatch(
        /^BuildVmTemplate did not finish within its maximum duration of 10 s/,
      );
      expect(sessionMembers(pid)).toEqual([]);
      expect(drivers()).toEqual([]);
      expect(await runLogText(db, runId)).toContain(
        "template build processes on the host: terminated",
      );
      expect(statusFiles()).toEqual([]);
      expect(vmConf(9020)).toBeNull();
    } finally {
      stall.armed = false;
      stall.release();
      node.setTiming({ timeScale: 0.01 });
    }
  }, 90_000);
});

describe("BuildVmTemplate sizes its space to the build", () => {
  it("too little space on the target storage → refused with both figures, nothing created", async () => {
    // Another VM's disk fills the 256 GiB thin pool but for 1 GiB (sparse: the pool counts
    // volume sizes, so the earlier tests' templates are counted too).
    const pool = path.join(node.root, ".lab/volumes/local-lvm");
    fs.mkdirSync(pool, { recursive: true });
    const used = fs
      .readdirSync(pool)
      .reduce((sum, name) => sum + fs.statSync(path.join(pool, name)).size, 0);
    const other = path.join(pool, "vm-500-disk-0");
    fs.writeFileSync(other, "");
    fs.truncateSync(other, 255 * 1024 ** 3 - used);
    try {
      const done = await settled(db, await run([9030]));
      expect(done.status).toBe("failed");
      const figures = done.failureReason?.match(
        /^template build failed: storage local-lvm has (\d+) MiB available; the templates need (\d+) MiB there \(1 × (\d+) MiB disk\)/,
      );
      expect(figures, done.failureReason ?? "").not.toBeNull();
      const [available, need, disk] = figures!.slice(1).map(Number);
      expect(available).toBe(1024);
      expect(disk).toBe(3072); // the lab image's virtual size, 3 GiB
      expect(need).toBe(3072);
      expect(vmConf(9030)).toBeNull();
    } finally {
      fs.rmSync(other);
    }
  });
});

describe("BuildVmTemplate's phase line never lags its log", () => {
  it("the driver moves on between the step's reads → every phase the step shows is the log's newest phase marker", async () => {
    // A stand-in driver (the exact command line the step expects) the test moves on itself.
    const dir = buildDir();
    fs.writeFileSync(
      path.join(dir, "template-run.sh"),
      [
        "#!/bin/bash",
        'd="$(dirname "$0")"',
        'exec 9>>"$d/lock"; flock -n 9 || exit 75; echo "$$" > "$d/lock"',
        'echo "$$" > "$d/pid"; echo running > "$d/state"; echo "step 0" > "$d/phase"',
        'echo "12:00:00 == step 0" > "$d/build.log"',
        "sleep 120 & wait",
        "",
      ].join("\n"),
    );
    fs.writeFileSync(path.join(dir, "build.env"), "");
    // On the node (its namespace), with the exact command line the host's driver has.
    const standIn = node.command([
      "bash",
      `${HOST_BUILD_DIR}/template-run.sh`,
      `${HOST_BUILD_DIR}/build.env`,
    ]);
    const driver = spawn(standIn.file, standIn.args, { detached: true, stdio: "ignore" });
    strays.push(driver);
    await waitFor("the stand-in driver", async () => hostFile("state") === "running");

    race.active = true;
    race.markers = [];
    try {
      const runId = await run([9040], racing);
      await waitFor("four polls", async () => (await pollDetails(runId)).length >= 4);
      race.active = false;
      await abortRun(db, { runId, actor: "test" });
      await settled(db, runId);
      const shown = await pollDetails(runId);
      expect(shown.length).toBeGreaterThanOrEqual(4);
      // Once the test stops moving the driver on, its last marker stays the newest one.
      const newest = shown.map((_, i) => race.markers[Math.min(i, race.markers.length - 1)]);
      expect(shown).toEqual(newest);
      // The abort took the stand-in down: a live leader with the exact command line is ours.
      expect(sessionMembers(driver.pid!)).toEqual([]);
    } finally {
      race.active = false;
      driver.kill("SIGKILL");
    }
  });
});
