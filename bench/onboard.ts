/**
 * `npm run bench:onboard -- --hosts 50 [--time-scale 0.02] [--concurrency 8]`: fresh Debian 13
 * lab nodes onboarded at once, the whole order (createOnboardHostPipeline), by ONE worker.
 *
 * Default 10 hosts at the lab's time scale 0.02, not the 50: a host's lab CPU is ~2 s
 * (the kernel's count, below), so at 0.02 — one host's critical path ~17 s — 50 hosts' CPU alone
 * is 3.3 × that path on 2 cores, whatever the engine does: "the machine's floor" line says so in
 * every run. `--time-scale 1` gives the lab's realistic apt and reboot durations (one host
 * ~250 s), where the floor is ~0.45 × and what is left above it is the engine's.
 *
 * - CPU is the kernel's count where the bench can make cgroups (bench/support/cpu-account.ts):
 *   the lab (this process with its SSH and API servers and the tool server's thread, and every
 *   process the hosts run, detached jobs included), the worker processes (its start-up on a
 *   line of its own), Postgres (its postmaster and the backends it forks).
 * - The worker is `startWorker` (worker/runner.ts) with the real pipeline, run in a child
 *   process of this one (this file with `--worker`): the lab's SSH and Proxmox API servers live
 *   in this process, and their CPU (ssh2's server side, TLS) must not count as the worker's.
 * - Baseline in the same run: ONE host onboarded alone, same lab timing, same worker settings,
 *   its own worker process. Its wall time is the critical path this bench divides by: the lab's
 *   simulated durations of one host (apt, reboot) plus what the product needs per step at best
 *   (SSH handshakes, poll intervals). The goal, wall(N) ÷ wall(1) ≤ 1.10, says onboarding N
 *   hosts at once takes about as long as one.
 * - One template is published (VMID 9000, one plan version): with
 *   no catalog a fresh host can never become active — Proxmox over Debian leaves `local`
 *   without disk images, the storage fix lives in BuildVmTemplate, and RegisterCapacity refuses
 *   image capacity 0. So every host really builds its template (small 256 KiB image).
 * - Postgres queries are counted on the wire: every `pg.Client#query` of the worker process,
 *   split by whose they are (lib/pipeline/query-scope.ts): the engine's bookkeeping of a tick,
 *   the step's own (visit, services, log lines), the worker's upkeep (heartbeats, recovery
 *   sweep, waiters' wake-ups) and graphile-worker's (fetching and completing jobs, its own
 *   polling); ÷ tick jobs it ran, and ÷ step visits (a job may make several: carrying on).
 * - SSH connections per host: accepted authentications seen by the lab node's SSH server (every
 *   connection authenticates exactly once); attempts are every authentication request it saw.
 * - Waiting: the worker slot time of visits that ended in a poll (the work was not done yet) as
 *   a share of all visits' slot time, from `step_visits`.
 */
import { EventEmitter } from "node:events";
import fs from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { inArray } from "drizzle-orm";
import pg from "pg";
import type { WorkerEvents } from "graphile-worker";
import { startImageServer, startLab, type ImageServer, type LabNode } from "@/lab";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import { toolServerStats } from "@/lab/tool-server";
import { createDb, type Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { runs, stepVisits } from "@/lib/db/schema";
import { createHost } from "@/lib/hosts/create-host";
import type { OnboardingConfig } from "@/lib/steps/onboarding/config";
import { setCatalog } from "@/test/fixtures/build-vm-template";
import { DEFAULT_WORKER_CONCURRENCY } from "@/worker/concurrency";
import { openCpuAccount, type CpuAccount } from "./support/cpu-account";
import { startBenchPostgres } from "./support/postgres";
import { report } from "./support/report";
import { exitOf, spawnUntilEnd, stopProcessGroup } from "./support/processes";
import { BenchCannotRun, runBench, startUntilEnd } from "./support/run-bench";

const USAGE = `Usage: npm run bench:onboard -- [--hosts N] [--time-scale S] [--concurrency C]
  --hosts N         fresh lab nodes onboarded at once (default 10; the issue's figure: 50)
  --time-scale S    lab time scale: 1 = realistic apt and reboot durations (default 0.02)
  --concurrency C   worker ticks at once (default: the worker's production default, ${DEFAULT_WORKER_CONCURRENCY})`;

const TEMPLATE_VMID = 9000;

type QueryCounts = Record<"engine" | "step" | "worker" | "graphile-worker", number>;
type WorkerReport = {
  /** From "ready" (its start-up, tsx compiling the product, not counted) to its stop. */
  cpuSeconds: number;
  /** Its whole life, start-up included. */
  lifeCpuSeconds: number;
  queries: QueryCounts;
  ticks: number;
  sshOpened: number;
  sshReused: number;
};

/**
 * The lab-friendly configuration: the image server for downloads; the production poll interval
 * (30 s), as waiting runs are woken by their waiters the moment the host's status changes, and
 * the poll's own tick is only the fallback (`BENCH_POLL_SECONDS` to try another).
 */
async function labConfig(image: ImageServer): Promise<OnboardingConfig> {
  const { onboardingConfigFromEnv } = await import("@/lib/steps/onboarding/config");
  const production = onboardingConfigFromEnv({});
  return {
    ...production,
    cloudImageUrl: image.imageUrl,
    cloudImageSumsUrl: image.sumsUrl,
    ...labProxmoxKeyring(image.keyringUrl),
    pollSeconds: Number(process.env.BENCH_POLL_SECONDS ?? production.pollSeconds),
    rebootDeadlineSeconds: 300,
  };
}

// ---- the worker process -------------------------------------------------------------------

async function workerMain() {
  const { url, config, concurrency } = JSON.parse(process.env.BENCH_WORKER!) as {
    url: string;
    config: OnboardingConfig;
    concurrency: number;
  };
  // Count before any pool exists: every query any client of this process sends, by whose.
  const { currentQueryScope } = await import("@/lib/pipeline/query-scope");
  const queries: QueryCounts = { engine: 0, step: 0, worker: 0, "graphile-worker": 0 };
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    queries[currentQueryScope() ?? "graphile-worker"]++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;

  const { createOnboardHostPipeline } = await import("@/lib/steps/onboarding");
  const { TICK_TASK } = await import("@/lib/pipeline/schedule");
  const { startWorker } = await import("@/worker/runner");
  const pipeline = createOnboardHostPipeline(config);
  const events: WorkerEvents = new EventEmitter();
  let ticks = 0;
  events.on("job:start", ({ job }) => {
    if (job.task_identifier === TICK_TASK) ticks++;
  });
  const worker = await startWorker({
    connectionString: url,
    pipelines: { [pipeline.name]: pipeline },
    concurrency,
    periodicChecks: false,
    events,
    log: () => {},
  });
  const cpu0 = process.cpuUsage();
  const queries0 = { ...queries };
  process.send!({ ready: true });
  process.on("message", (message: { stop?: boolean }) => {
    if (!message.stop) return;
    void worker.stop().then(() => {
      const cpu = process.cpuUsage(cpu0);
      const life = process.cpuUsage();
      const result: WorkerReport = {
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        lifeCpuSeconds: (life.user + life.system) / 1e6,
        queries: {
          engine: queries.engine - queries0.engine,
          step: queries.step - queries0.step,
          worker: queries.worker - queries0.worker,
          "graphile-worker": queries["graphile-worker"] - queries0["graphile-worker"],
        },
        ticks,
        sshOpened: worker.sshConnections.stats.opened,
        sshReused: worker.sshConnections.stats.reused,
      };
      process.send!(result, () => process.exit(0));
    });
  });
}

type WorkerChild = { stop(): Promise<WorkerReport>; kill(): Promise<void> };

async function startWorkerProcess(
  url: string,
  config: OnboardingConfig,
  concurrency: number,
  account: CpuAccount | null,
): Promise<WorkerChild> {
  const node = [process.execPath, "--import", "tsx", fileURLToPath(import.meta.url), "--worker"];
  // Into its own account before it runs a line of Node (the shell execs it: same PID).
  const [command, ...args] =
    account === null
      ? node
      : ["/bin/sh", "-c", `${account.joinLine()} && exec "$@"`, "sh", ...node];
  const child = spawnUntilEnd("worker process", command!, args, {
    env: { ...process.env, BENCH_WORKER: JSON.stringify({ url, config, concurrency }) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = exitOf(child).then((code) => {
    throw new Error(`the worker process exited (${code})`);
  });
  exited.catch(() => {});
  await Promise.race([
    new Promise<void>((resolve) => child.once("message", () => resolve())),
    exited,
  ]);
  return {
    async stop() {
      const result = new Promise<WorkerReport>((resolve) =>
        child.once("message", (m) => resolve(m as WorkerReport)),
      );
      child.send({ stop: true });
      const report = await Promise.race([result, exited]);
      // Reaped (its exit seen), so its CPU has landed in this process's cutime.
      await exitOf(child);
      return report;
    },
    kill: () => stopProcessGroup(child),
  };
}

// ---- one round: N fresh nodes, one worker ------------------------------------------------

type Round = {
  wallSeconds: number;
  failed: string[];
  worker: WorkerReport;
  /** Step visits, and the worker slot seconds they held: all, and those that waited. */
  visits: number;
  visitSeconds: number;
  waitingVisitSeconds: number;
  /** Slot seconds and visits by step and outcome ("BuildVmTemplate poll"). */
  byStep: Map<string, { visits: number; seconds: number }>;
  sshConnections: number;
  sshAuthAttempts: number;
  hostCommands: number;
  /**
   * The kernel's counters (cgroups), where this machine lets the bench make them: the lab's
   * processes (this one, the hosts' commands, their detached jobs) and the worker's whole life.
   */
  accounted: { labSeconds: number; workerSeconds: number; postgresSeconds: number } | null;
  /** Everything the round cost on this machine: lab, its tools, the worker, Postgres excluded. */
  treeCpuSeconds: number;
  /** Of which: this process (the lab's SSH/API servers and tool server, the bench itself). */
  selfCpuSeconds: number;
  /** Simulated tool calls, and the tool server thread's CPU seconds (part of selfCpuSeconds). */
  toolCalls: number;
  toolServerCpuSeconds: number;
};

/**
 * CPU seconds of this process (all its threads: the tool server's too) and its reaped children
 * (the lab hosts' processes: bash, the tool clients, and the worker process once it exited),
 * from /proc/self/stat. A process that left the tree (`nohup setsid`, as the template build's
 * driver) is not counted, but the tools it calls run in the tool server and are.
 */
function processTreeCpuSeconds(): { tree: number; self: number } {
  const fields = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  // utime, stime, cutime, cstime are fields 14–17 of stat(5); [0] here is field 3.
  const seconds = (indexes: number[]) =>
    indexes.reduce((sum, i) => sum + Number(fields[i]), 0) / 100;
  return { tree: seconds([11, 12, 13, 14]), self: seconds([11, 12]) };
}

type Accounts = { lab: CpuAccount; worker: CpuAccount; postgres: CpuAccount };

function accountedSeconds(accounts: Accounts | null) {
  if (accounts === null) return null;
  return {
    labSeconds: accounts.lab.seconds(),
    workerSeconds: accounts.worker.seconds(),
    postgresSeconds: accounts.postgres.seconds(),
  };
}

/**
 * Accounts for the lab (this process and all it starts), the worker processes (they join theirs
 * as they start) and Postgres (its postmaster: the backends it forks from now on follow it).
 */
function openAccounts(postgresDataDir: string): Accounts | null {
  const lab = openCpuAccount("lab");
  const worker = lab === null ? null : openCpuAccount("worker");
  const postgres = worker === null ? null : openCpuAccount("postgres");
  if (lab === null || worker === null || postgres === null) return null;
  lab.join(process.pid);
  const postmaster = fs.readFileSync(`${postgresDataDir}/postmaster.pid`, "utf8").split("\n")[0]!;
  postgres.join(Number(postmaster));
  return { lab, worker, postgres };
}

/** Tool calls and tool server CPU so far (zero while no tool server runs). */
async function toolServerTotals(): Promise<{ calls: number; cpuSeconds: number }> {
  const stats = await toolServerStats();
  if (stats === null) return { calls: 0, cpuSeconds: 0 };
  return {
    calls: Object.values(stats.calls).reduce((sum, n) => sum + n, 0),
    cpuSeconds: stats.cpuSeconds,
  };
}

async function settledAll(db: Database, runIds: string[], timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await db.select().from(runs).where(inArray(runs.id, runIds));
    if (rows.every((r) => r.status !== "running")) return rows;
    if (Date.now() > deadline) {
      const left = rows.filter((r) => r.status === "running");
      throw new Error(
        `${left.length} runs still running after ${timeoutMs / 1000} s, e.g. at ${left[0]?.currentStep}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function round(options: {
  label: string;
  hosts: number;
  timeScale: number;
  url: string;
  config: OnboardingConfig;
  concurrency: number;
  accounts: Accounts | null;
}): Promise<Round> {
  const nodes: LabNode[] = await Promise.all(
    Array.from({ length: options.hosts }, (_, i) =>
      startUntilEnd(
        `lab node ${options.label}${i + 1}`,
        startLab({ name: `${options.label}${i + 1}`, timeScale: options.timeScale }),
        (node) => node.stop(),
      ),
    ),
  );
  const cpu0 = processTreeCpuSeconds();
  const accounted0 = accountedSeconds(options.accounts);
  const tools0 = await toolServerTotals();
  const worker = await startWorkerProcess(
    options.url,
    options.config,
    options.concurrency,
    options.accounts?.worker ?? null,
  );
  const { db, pool } = createDb(options.url, 4);
  try {
    await setCatalog(db, [TEMPLATE_VMID]);
    const started = performance.now();
    // One transaction per host, as the form does; all of them before the worker can finish one.
    const created = await Promise.all(
      nodes.map((node) =>
        createHost(
          db,
          {
            name: node.name,
            address: node.ssh.host,
            sshPort: node.ssh.port,
            apiPort: Number(new URL(node.api.url).port),
            sshUser: node.ssh.username,
            authMethod: "password",
            password: node.ssh.password,
          },
          "bench",
        ),
      ),
    );
    const rows = await settledAll(
      db,
      created.map((c) => c.runId),
      // Generous: the lab's tools cost ~15 CPU seconds per host on top of the simulated time.
      120_000 + options.hosts * 30_000 + 20 * 600_000 * options.timeScale,
    );
    const wallSeconds = (performance.now() - started) / 1000;
    const stats = await worker.stop();
    const visits = await db
      .select({
        step: stepVisits.step,
        visit: stepVisits.visit,
        outcome: stepVisits.outcome,
        startedAt: stepVisits.startedAt,
        finishedAt: stepVisits.finishedAt,
      })
      .from(stepVisits)
      .where(
        inArray(
          stepVisits.runId,
          created.map((c) => c.runId),
        ),
      );
    const held = (v: (typeof visits)[number]) =>
      (v.finishedAt.getTime() - v.startedAt.getTime()) / 1000;
    const byStep = new Map<string, { visits: number; seconds: number }>();
    for (const v of visits) {
      const key = `${v.step} ${v.outcome}`;
      const entry = byStep.get(key) ?? { visits: 0, seconds: 0 };
      entry.visits += 1;
      entry.seconds += held(v);
      byStep.set(key, entry);
    }
    return {
      wallSeconds,
      visits: visits.length,
      visitSeconds: visits.reduce((sum, v) => sum + held(v), 0),
      // A chain's first visit starts the work (a job, a build, a reboot); a later one that polls
      // found it still under way: that is the waiting.
      waitingVisitSeconds: visits
        .filter((v) => v.outcome === "poll" && v.visit > 1)
        .reduce((sum, v) => sum + held(v), 0),
      byStep,
      failed: rows
        .filter((r) => r.status !== "succeeded")
        .map((r) => `${r.failedStep}: ${r.failureReason}`),
      worker: stats,
      sshConnections: nodes.reduce(
        (n, node) => n + node.authAttempts.filter((a) => a.accepted).length,
        0,
      ),
      sshAuthAttempts: nodes.reduce((n, node) => n + node.authAttempts.length, 0),
      hostCommands: nodes.reduce((n, node) => n + node.commands.length, 0),
      accounted: (() => {
        const now = accountedSeconds(options.accounts);
        if (now === null || accounted0 === null) return null;
        return {
          labSeconds: now.labSeconds - accounted0.labSeconds,
          workerSeconds: now.workerSeconds - accounted0.workerSeconds,
          postgresSeconds: now.postgresSeconds - accounted0.postgresSeconds,
        };
      })(),
      ...(() => {
        const cpu = processTreeCpuSeconds();
        return { treeCpuSeconds: cpu.tree - cpu0.tree, selfCpuSeconds: cpu.self - cpu0.self };
      })(),
      ...(await toolServerTotals().then((tools) => ({
        toolCalls: tools.calls - tools0.calls,
        toolServerCpuSeconds: tools.cpuSeconds - tools0.cpuSeconds,
      }))),
    };
  } finally {
    await worker.kill();
    await pool.end();
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      hosts: { type: "string", default: "10" },
      "time-scale": { type: "string", default: "0.02" },
      concurrency: { type: "string", default: String(DEFAULT_WORKER_CONCURRENCY) },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const hosts = Number(values.hosts);
  const timeScale = Number(values["time-scale"]);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(hosts) || hosts < 1)
    throw new BenchCannotRun(`--hosts: a whole number ≥ 1\n${USAGE}`);
  if (!(timeScale > 0)) throw new BenchCannotRun(`--time-scale: a positive number\n${USAGE}`);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new BenchCannotRun(`--concurrency: a whole number ≥ 1\n${USAGE}`);

  const benchStarted = performance.now();
  const pgServer = await startBenchPostgres("onboard");
  const image = await startUntilEnd(
    "image server",
    startImageServer({ imageSizeBytes: 256 * 1024 }),
    (server) => server.stop(),
  );
  const config = await labConfig(image);
  const accounts = openAccounts(pgServer.dataDir);
  const common = { timeScale, config, concurrency, accounts };

  const baselineUrl = await pgServer.createDatabase("baseline");
  await migrateDatabase(baselineUrl);
  const one = await round({ ...common, label: "solo", hosts: 1, url: baselineUrl });
  if (one.failed.length) throw new Error(`the baseline host failed: ${one.failed[0]}`);

  const fleetUrl = await pgServer.createDatabase("fleet");
  await migrateDatabase(fleetUrl);
  const many = await round({ ...common, label: "pve", hosts, url: fleetUrl });

  report("hosts", hosts, "hosts");
  report("lab time scale", timeScale, "×");
  report("worker concurrency", concurrency, "ticks");
  report("poll interval (the fallback behind the waiters)", config.pollSeconds, "s");
  report("baseline: one host alone, wall time (the critical path)", one.wallSeconds, "s");
  report(`${hosts} hosts at once, wall time`, many.wallSeconds, "s");
  report(`${hosts} hosts succeeded`, hosts - many.failed.length, "hosts");
  report("wall time ÷ critical path (goal ≤ 1.10)", many.wallSeconds / one.wallSeconds, "×");
  report("worker CPU, baseline (one host)", one.worker.cpuSeconds, "s");
  report(`worker CPU, ${hosts} hosts`, many.worker.cpuSeconds, "s");
  report("worker CPU per host", many.worker.cpuSeconds / hosts, "s");
  // The kernel's counters where there are cgroups; else this process's own and its reaped
  // children's (a detached job that left the tree is then missing from the hosts' share).
  const labSeconds = many.accounted?.labSeconds ?? many.treeCpuSeconds - many.worker.lifeCpuSeconds;
  const measure = many.accounted === null ? ", detached jobs not counted (no cgroup)" : "";
  report(
    "lab CPU per host (SSH/API servers and simulated tools; goal ≤ 1)",
    labSeconds / hosts,
    "s",
  );
  report(
    "lab CPU per host in the lab's process (and this bench's)",
    many.selfCpuSeconds / hosts,
    "s",
  );
  report("lab CPU per host in the tool server's thread", many.toolServerCpuSeconds / hosts, "s");
  report(
    `lab CPU per host in the hosts' processes (bash, tool clients, jobs${measure})`,
    (labSeconds - many.selfCpuSeconds) / hosts,
    "s",
  );
  report(
    "worker start-up CPU (once per worker process, not per host)",
    (many.accounted?.workerSeconds ?? many.worker.lifeCpuSeconds) - many.worker.cpuSeconds,
    "s",
  );
  if (many.accounted !== null) {
    // The worker's start-up is over before the first host is added: not part of the round.
    const all = many.accounted.labSeconds + many.worker.cpuSeconds + many.accounted.postgresSeconds;
    report("Postgres CPU per host", many.accounted.postgresSeconds / hosts, "s");
    // Lab, worker and Postgres share this machine's cores: no engine makes N hosts finish before
    // their CPU has run, whatever the critical path.
    report(
      "the machine's floor: all CPU ÷ cores ÷ critical path",
      all / os.availableParallelism() / one.wallSeconds,
      "×",
    );
  }
  report("simulated tool calls per host", many.toolCalls / hosts, "calls");
  report("machine cores", os.availableParallelism(), "cores");
  report("SSH connections opened per host, baseline", one.sshConnections, "connections");
  report("SSH connections opened per host", many.sshConnections / hosts, "connections");
  report("SSH authentications per host", many.sshConnections / hosts, "authentications");
  report("SSH authentication attempts per host", many.sshAuthAttempts / hosts, "attempts");
  report(
    "SSH connections the worker reused (its pool) per host",
    many.worker.sshReused / hosts,
    "leases",
  );
  report("SSH commands per host", many.hostCommands / hosts, "commands");
  report("ticks (jobs) per host", many.worker.ticks / hosts, "ticks");
  report("step visits per host", many.visits / hosts, "visits");
  for (const [label, round] of [
    ["baseline", one],
    [`${hosts} hosts`, many],
  ] as const) {
    const q = round.worker.queries;
    const all = q.engine + q.step + q.worker + q["graphile-worker"];
    report(`Postgres queries per tick, ${label}`, all / round.worker.ticks, "queries");
    for (const [whose, n] of Object.entries(q))
      report(`Postgres queries per tick, ${label}: ${whose}`, n / round.worker.ticks, "queries");
    report(`Postgres queries per visit, ${label}: engine`, q.engine / round.visits, "queries");
    report(`Postgres queries per visit, ${label}: step`, q.step / round.visits, "queries");
  }
  report("worker slot time in visits per host", many.visitSeconds / hosts, "s");
  report(
    "share of worker slot time spent waiting (later visits that polled; goal < 5 %)",
    (many.waitingVisitSeconds / many.visitSeconds) * 100,
    "%",
  );
  for (const [key, entry] of [...many.byStep].sort((a, b) => b[1].seconds - a[1].seconds))
    report(
      `slot time per host: ${key} (${entry.visits / hosts} visits)`,
      entry.seconds / hosts,
      "s",
    );
  for (const reason of [...new Set(many.failed)].slice(0, 5)) console.log(`failed: ${reason}`);
  report("benchmark took", (performance.now() - benchStarted) / 1000, "s");
  if (many.failed.length) process.exitCode = 1;
}

if (process.argv.includes("--worker")) {
  workerMain().catch((error: Error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  runBench(main);
}
