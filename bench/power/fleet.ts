import fs from "node:fs";
import path from "node:path";
import { and, asc, desc, eq, gt, isNull } from "drizzle-orm";
import { waitUntil } from "@/lab";
import { startPowerFleet, type PowerFleet, type PowerFleetRequest } from "@/lab/pve/power-fleet";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import type { AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import {
  credentials,
  hosts,
  powerEvents,
  powerTargets,
  powerSelfTests,
  powerShutdownCalls,
  runs,
  stepVisits,
  upsMonitorState,
} from "@/lib/db/schema";
import { createPowerTarget } from "@/lib/power/operations/power-targets";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { createUpsDevice } from "@/lib/power/operations/ups-devices";
import { seal } from "@/lib/secrets/seal";
import { percentile, report } from "../support/report";
import { openBenchDb, startBenchPostgres } from "../support/postgres";
import { startUntilEnd } from "../support/run-bench";
import { startPowerWorker, type PowerWorkerProcess } from "./worker";
import type { WorkerStats } from "./worker-process";

/**
 * `npm run bench:power -- --targets 1000 [--stages 10] [--down-after-ms 2000]` (bench/power.ts
 * hands over here): the armed shutdown of a whole fleet, from the trigger to the last call and
 * to every target seen down, counted at the lab.
 *
 * - The fleet: N protected standalone Proxmox VE nodes in `--stages` stages (N / stages each),
 *   served by lab/pve/power-fleet.ts in this process — one HTTPS API per node on its own loopback
 *   port, a shared RSA 2048 certificate, a token of its own each; a node answers its shutdown
 *   with `null` and stops listening `--down-after-ms` later (Proxmox: `sleep 2; poweroff`).
 *   Each is a host row as onboarding leaves it (address, port, node name, pin, token sealed) and
 *   a power target made with createPowerTarget; the console is armed with setPowerMode, and the
 *   self-test arming queues is let finish before the outage.
 * - The console: the real worker side in a process of its own (bench/power/worker-process.ts:
 *   power runner with the product's 2 slots, power monitor at the default 1 s poll) against a
 *   lab UPS (lab/ups/lab-ups.ts, NUT, the console logged in as a secondary) that the bench takes
 *   straight to low battery (`jumpToLowBattery`).
 * - Time zero: the trigger's latch (ups_monitor_state.latched_at; the `trigger.fired` event
 *   carries the same moment). The calls and the nodes going down are taken from the lab's own
 *   request log and power-offs, not from the console's records; the console's "seen down" (its
 *   VerifyTargetsDown success, the last `target.down` event, the latest `seen_down_at`) beside.
 * - The stages' own waits: the sum over the stages of the slowest answer to a first call of the
 *   stage (arrival → answer at the lab): what the sequence cannot avoid waiting for. The goal:
 *   trigger → last call ≤ 2 s beyond them, and every target down.
 * - Two outages: without faults, then with one target in 100 failing its first two calls
 *   (500), answered on the third — the console's retry pauses (1 s, then 2 s) are then part of
 *   the last call's time, and printed beside it.
 * - Where the time goes: the run's step visits (each ShutDownTargets visit sends one stage), the
 *   lab's first and last call within each visit, the worker process's CPU, event-loop delay and
 *   queries with the time they waited for a pooled connection, by whose they are (the engine's,
 *   the steps', the rest), and the CPU of the lab (this process) and of Postgres.
 * - `BENCH_POWER_CONCURRENCY=N` runs the power runner with N slots (pool 2N + 2) instead of 2.
 */

const UPS = "benchups";
const ACTOR: AuditActor = { userId: null, name: "bench-power-fleet" };
/** One target in this many fails its first two calls in the second outage. */
const FAULTY_EVERY = 100;
const FAILURES = 2;
const ASK_EVERY_MS = 100;

export type FleetOptions = { targets: number; stages: number; downAfterMs: number };

type Setup = {
  db: Database;
  ups: LabUps;
  upsId: string;
  fleet: PowerFleet;
  worker: PowerWorkerProcess;
  stageOf: Map<string, number>;
  pgDataDir: string;
  targets: number;
};

type Visit = {
  step: string;
  visit: number;
  startedAt: number;
  finishedAt: number;
  outcome: string;
};

type Outage = {
  label: string;
  faulty: Set<string>;
  flippedAt: number;
  latchedAt: number;
  firedEventAt: number | null;
  run: { id: string; createdAt: number; status: string; failureReason: string | null };
  visits: Visit[];
  /** The lab's shutdown POSTs of this outage, in arrival order. */
  posts: PowerFleetRequest[];
  /** Each node's power-off (ms since the epoch), null: still up. */
  downAt: Map<string, number | null>;
  calls: {
    targetName: string;
    attempt: number;
    state: string;
    /** The claim's transaction began (Postgres now()). */
    startedAt: number;
    /** The settle's clock, as it began. */
    finishedAt: number | null;
    seenDownAt: number | null;
  }[];
  lastTargetDownEventAt: number | null;
  targetDownEvents: number;
  /** The run's context as JSON, at its end. */
  contextBytes: number;
  /** Flip → ShutDownTargets advanced (null: it never did). */
  sends: { worker: WorkerStats; labCpuSeconds: number; postgresCpuSeconds: number | null } | null;
  /** Flip → the run's end (the worker's: since `sends` when taken). */
  worker: WorkerStats;
  labCpuSeconds: number;
  postgresCpuSeconds: number | null;
  load: string;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const s = (ms: number) => ms / 1000;

export async function fleetBench(options: FleetOptions): Promise<void> {
  const benchStarted = performance.now();
  const pg = await startBenchPostgres("power-fleet");
  const url = await pg.createDatabase("clupilot");
  await migrateDatabase(url);
  const { db } = openBenchDb(url, 8);
  const ups = await startUntilEnd("lab UPS", startLabUps({ name: UPS, snmp: false }), (started) =>
    started.stop(),
  );
  const fleet = await startUntilEnd(
    "power fleet",
    startPowerFleet({ nodes: options.targets, downAfterMs: options.downAfterMs }),
    (started) => started.stop(),
  );
  const device = await createUpsDevice(
    db,
    {
      name: "bench-ups",
      source: {
        type: "nut",
        host: ups.nut!.host,
        port: ups.nut!.port,
        upsName: ups.nut!.upsName,
        username: ups.nut!.username,
        password: ups.nut!.password,
      },
    },
    ACTOR,
  );
  const seeding = performance.now();
  const { targetIds, stageOf } = await seedTargets(db, fleet, device.id, options.stages);
  console.error(
    `bench: ${targetIds.length} targets in ${options.stages} stages seeded in ${s(performance.now() - seeding).toFixed(1)} s`,
  );
  // A node goes down seconds after its call; a shorter wait keeps a miss from stalling the bench.
  await updatePowerSettings(db, { shutdown: { targetDownSeconds: 60 } }, ACTOR);
  const concurrency = process.env.BENCH_POWER_CONCURRENCY;
  const worker = await startPowerWorker(
    url,
    null,
    concurrency ? { BENCH_POWER_CONCURRENCY: concurrency } : {},
  );
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: targetIds }, ACTOR);
  // Arming queues a self-test that asks every target: done before the outage, not during it.
  await waitUntil(async () => (await db.select().from(powerSelfTests).limit(1)).length > 0, {
    timeoutMs: 600_000,
    what: "the self-test queued by arming to finish",
  });
  const setup: Setup = {
    db,
    ups,
    upsId: device.id,
    fleet,
    worker,
    stageOf,
    pgDataDir: pg.dataDir,
    targets: targetIds.length,
  };

  await onMains(setup, Date.now());
  const clean = await outage(setup, "no faults", new Set());
  await backToMains(setup);
  const faulty = new Set(
    fleet.nodes.filter((_, i) => i % FAULTY_EVERY === FAULTY_EVERY / 2 - 1).map((n) => n.name),
  );
  if (faulty.size === 0) faulty.add(fleet.nodes.at(-1)!.name);
  const failing = await outage(
    setup,
    `1 in ${FAULTY_EVERY} failing twice (${faulty.size} targets)`,
    faulty,
  );

  console.log(
    `fleet: ${setup.targets} targets in ${options.stages} stages, nodes down ${s(options.downAfterMs)} s after their call${concurrency ? `, power runner ${concurrency} slots` : ""}`,
  );
  reportOutage(setup, clean, "");
  reportOutage(setup, failing, "failing: ");
  report("benchmark took", s(performance.now() - benchStarted), "s");
}

/** Hosts as onboarding leaves them (token sealed, pin), each protected by createPowerTarget. */
async function seedTargets(
  db: Database,
  fleet: PowerFleet,
  upsId: string,
  stages: number,
): Promise<{ targetIds: string[]; stageOf: Map<string, number> }> {
  const nodes = fleet.nodes;
  const stageOf = new Map(nodes.map((n, i) => [n.name, Math.floor((i * stages) / nodes.length)]));
  const hostIds: string[] = [];
  for (let from = 0; from < nodes.length; from += 250) {
    const chunk = nodes.slice(from, from + 250);
    const ssh = await db
      .insert(credentials)
      .values(chunk.map(() => ({ kind: "password" as const, sealed: seal('{"password":"-"}') })))
      .returning({ id: credentials.id });
    const tokens = await db
      .insert(credentials)
      .values(chunk.map((n) => ({ kind: "api_token" as const, sealed: seal(n.token.secret) })))
      .returning({ id: credentials.id });
    const rows = await db
      .insert(hosts)
      .values(
        chunk.map((n, i) => ({
          name: n.name,
          address: "127.0.0.1",
          sshUser: "root",
          credentialId: ssh[i]!.id,
          nodeName: n.name,
          apiPort: n.port,
          apiCertSha256: fleet.certSha256,
          apiTokenId: n.token.id,
          apiTokenCredentialId: tokens[i]!.id,
        })),
      )
      .returning({ id: hosts.id });
    hostIds.push(...rows.map((r) => r.id));
  }
  const targetIds = new Array<string>(nodes.length);
  let next = 0;
  const lane = async () => {
    while (next < nodes.length) {
      const i = next++;
      const target = await createPowerTarget(
        db,
        {
          kind: "pve-node",
          hostId: hostIds[i]!,
          feeds: [upsId],
          feedPolicy: "any",
          stage: stageOf.get(nodes[i]!.name)!,
        },
        ACTOR,
      );
      targetIds[i] = target.id;
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
  return { targetIds, stageOf };
}

/** The monitor has read the UPS on mains since `since`. */
async function onMains(setup: Setup, since: number): Promise<void> {
  await waitUntil(
    async () => {
      const [state] = await setup.db
        .select()
        .from(upsMonitorState)
        .where(eq(upsMonitorState.upsId, setup.upsId));
      return (
        state?.reachable === true &&
        state.lastReading?.onBattery === false &&
        (state.lastReadingAt?.getTime() ?? 0) > since
      );
    },
    { timeoutMs: 60_000, what: "the console's monitor to read the UPS on mains" },
  );
}

/** Mains back, the latch released by an admin, every node powered on, faults cleared. */
async function backToMains(setup: Setup): Promise<void> {
  const { db, ups, upsId, fleet } = setup;
  const restored = Date.now();
  ups.control.restore();
  await onMains(setup, restored);
  const [free] = await db
    .select({ upsId: upsMonitorState.upsId })
    .from(upsMonitorState)
    .where(and(eq(upsMonitorState.upsId, upsId), isNull(upsMonitorState.latchedAt)));
  if (!free) await releaseLatch(db, { upsId }, ACTOR);
  await fleet.reset();
  // The monitor's next supervisor tick and reading see the released latch.
  await sleep(3000);
}

async function lastEventId(db: Database): Promise<number> {
  const [row] = await db
    .select({ id: powerEvents.id })
    .from(powerEvents)
    .orderBy(desc(powerEvents.id))
    .limit(1);
  return row?.id ?? 0;
}

/**
 * CPU seconds of the embedded Postgres: its postmaster, the backends alive now and those it
 * reaped (their time is the postmaster's cutime/cstime). null where /proc cannot tell.
 */
function postgresCpuSeconds(dataDir: string): number | null {
  try {
    const postmaster = Number(
      fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0],
    );
    const tick = 100;
    const fields = (pid: number | string) => {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    };
    // After the command: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    const own = fields(postmaster);
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        const f = fields(pid);
        if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // gone meanwhile
      }
    }
    return ticks / tick;
  } catch {
    return null;
  }
}

async function outage(setup: Setup, label: string, faulty: Set<string>): Promise<Outage> {
  const { db, ups, upsId, fleet, worker } = setup;
  for (const node of fleet.nodes) {
    node.faults.statusPostFailures = faulty.has(node.name) ? FAILURES : 0;
  }
  const load = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const eventsBefore = await lastEventId(db);
  const requestsBefore = fleet.requests.length;
  await worker.stats(); // counted from here
  const pgCpuBefore = postgresCpuSeconds(setup.pgDataDir);
  const cpuBefore = process.cpuUsage();
  const flippedAt = Date.now();
  console.error(`bench: outage "${label}": UPS straight to low battery (load ${load})`);
  ups.control.jumpToLowBattery();

  let runId: string | null = null;
  await waitUntil(
    async () => {
      const [run] = await db
        .select({ id: runs.id })
        .from(runs)
        .where(and(eq(runs.pipeline, POWER_SHUTDOWN), gt(runs.createdAt, new Date(flippedAt))))
        .limit(1);
      runId = run?.id ?? null;
      return runId !== null;
    },
    { timeoutMs: 60_000, what: "the power-shutdown run to start" },
  );
  const id = runId!;
  let ended: typeof runs.$inferSelect | undefined;
  const deadline = Date.now() + 900_000;
  // The calls' part alone, up to ShutDownTargets' advance: the CPU it took everywhere.
  let sends: Outage["sends"] = null;
  for (;;) {
    [ended] = await db.select().from(runs).where(eq(runs.id, id));
    if (sends === null) {
      const [advanced] = await db
        .select({ id: stepVisits.id })
        .from(stepVisits)
        .where(
          and(
            eq(stepVisits.runId, id),
            eq(stepVisits.step, "ShutDownTargets"),
            eq(stepVisits.outcome, "advance"),
          ),
        );
      if (advanced) {
        const used = process.cpuUsage(cpuBefore);
        const pgCpu = postgresCpuSeconds(setup.pgDataDir);
        sends = {
          worker: await worker.stats(),
          labCpuSeconds: (used.user + used.system) / 1e6,
          postgresCpuSeconds: pgCpuBefore === null || pgCpu === null ? null : pgCpu - pgCpuBefore,
        };
      }
    }
    if (ended && ended.status !== "running") break;
    if (Date.now() > deadline)
      throw new Error(`the power-shutdown run ${id} did not end in 15 min`);
    await sleep(ASK_EVERY_MS);
  }
  const run = ended!;
  // The engine reads and writes the run's context (the frozen plan among it) on every tick.
  const contextBytes = Buffer.byteLength(JSON.stringify(run.context));
  const cpu = process.cpuUsage(cpuBefore);
  // (the worker's counts below are those after the sends, when they were taken)
  const pgCpuAfter = postgresCpuSeconds(setup.pgDataDir);
  const workerStats = await worker.stats();
  console.error(
    `bench: outage "${label}": run ${run.status}${run.failureReason ? ` (${run.failureReason.slice(0, 300)})` : ""}`,
  );

  const [state] = await db
    .select({ latchedAt: upsMonitorState.latchedAt })
    .from(upsMonitorState)
    .where(eq(upsMonitorState.upsId, upsId));
  const [fired] = await db
    .select({ at: powerEvents.at })
    .from(powerEvents)
    .where(and(eq(powerEvents.kind, "trigger.fired"), gt(powerEvents.id, eventsBefore)))
    .orderBy(asc(powerEvents.id))
    .limit(1);
  const visits = await db
    .select({
      step: stepVisits.step,
      visit: stepVisits.visit,
      startedAt: stepVisits.startedAt,
      finishedAt: stepVisits.finishedAt,
      outcome: stepVisits.outcome,
    })
    .from(stepVisits)
    .where(eq(stepVisits.runId, id))
    .orderBy(asc(stepVisits.id));
  const callRows = await callsOf(db, id);
  const downEvents = await db
    .select({ at: powerEvents.at })
    .from(powerEvents)
    .where(
      and(
        eq(powerEvents.kind, "target.down"),
        eq(powerEvents.runId, id),
        gt(powerEvents.id, eventsBefore),
      ),
    );
  const posts = fleet.requests
    .slice(requestsBefore)
    .filter((r) => r.method === "POST" && /\/nodes\/[^/]+\/status$/.test(r.path));
  return {
    label,
    faulty,
    flippedAt,
    latchedAt: state?.latchedAt?.getTime() ?? NaN,
    firedEventAt: fired?.at.getTime() ?? null,
    run: {
      id,
      createdAt: run.createdAt.getTime(),
      status: run.status,
      failureReason: run.failureReason,
    },
    visits: visits.map((v) => ({
      step: v.step,
      visit: v.visit,
      startedAt: v.startedAt.getTime(),
      finishedAt: v.finishedAt.getTime(),
      outcome: v.outcome,
    })),
    posts,
    downAt: new Map(fleet.nodes.map((n) => [n.name, n.downAt])),
    calls: callRows,
    contextBytes,
    lastTargetDownEventAt:
      downEvents.length > 0 ? Math.max(...downEvents.map((e) => e.at.getTime())) : null,
    targetDownEvents: downEvents.length,
    sends,
    worker: workerStats,
    labCpuSeconds: (cpu.user + cpu.system) / 1e6,
    postgresCpuSeconds:
      pgCpuBefore === null || pgCpuAfter === null ? null : pgCpuAfter - pgCpuBefore,
    load,
  };
}

/** The run's calls as the console recorded them, with the target's (host's) name. */
async function callsOf(db: Database, runId: string): Promise<Outage["calls"]> {
  const rows = await db
    .select({
      targetName: hosts.name,
      attempt: powerShutdownCalls.attempt,
      state: powerShutdownCalls.state,
      startedAt: powerShutdownCalls.startedAt,
      finishedAt: powerShutdownCalls.finishedAt,
      seenDownAt: powerShutdownCalls.seenDownAt,
    })
    .from(powerShutdownCalls)
    .innerJoin(powerTargets, eq(powerTargets.id, powerShutdownCalls.targetId))
    .innerJoin(hosts, eq(hosts.id, powerTargets.hostId))
    .where(eq(powerShutdownCalls.runId, runId))
    .orderBy(asc(powerShutdownCalls.id));
  return rows.map((r) => ({
    ...r,
    startedAt: r.startedAt.getTime(),
    finishedAt: r.finishedAt?.getTime() ?? null,
    seenDownAt: r.seenDownAt?.getTime() ?? null,
  }));
}

const max = (values: number[]) => (values.length === 0 ? NaN : Math.max(...values));
const min = (values: number[]) => (values.length === 0 ? NaN : Math.min(...values));
const median = (values: number[]) => percentile(values, 50);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

function reportOutage(setup: Setup, o: Outage, p: string): void {
  const t0 = o.latchedAt;
  const since = (at: number) => s(at - t0);
  const failing = o.faulty.size > 0;
  console.log(`${p}outage: ${o.label}; run ${o.run.status}; machine load ${o.load}`);

  // The calls as the lab received them.
  const byNode = new Map<string, PowerFleetRequest[]>();
  for (const post of o.posts) byNode.set(post.node, [...(byNode.get(post.node) ?? []), post]);
  const firsts = [...byNode.values()].map((calls) => calls[0]!);
  const lastCall = max(o.posts.map((r) => r.at));
  const slowest = new Map<number, number>();
  for (const call of firsts) {
    const stage = setup.stageOf.get(call.node)!;
    const answer = (call.answeredAt ?? call.at) - call.at;
    slowest.set(stage, Math.max(slowest.get(stage) ?? 0, answer));
  }
  const stageWaits = sum([...slowest.values()]);
  report(
    `${p}UPS flipped → trigger latched (the monitor's poll; LB held two readings)`,
    s(t0 - o.flippedAt),
    "s",
  );
  if (o.firedEventAt !== null && o.firedEventAt !== t0) {
    report(`${p}the trigger.fired event after the latch`, s(o.firedEventAt - t0), "s");
  }
  report(`${p}trigger → first shutdown call at the lab`, since(min(o.posts.map((r) => r.at))), "s");
  report(
    `${p}trigger → the last stage's first calls at the lab`,
    since(max(firsts.map((r) => r.at))),
    "s",
  );
  const a = since(lastCall);
  report(`${p}(a) trigger → last shutdown call at the lab`, a, "s");
  report(
    `${p}stages' own waits (Σ over ${slowest.size} stages of the slowest answer to a first call)`,
    s(stageWaits),
    "s",
  );
  report(`${p}(a) beyond the stages' own waits (goal ≤ 2 s)`, a - s(stageWaits), "s");
  // The failing target called last: the pauses between its answers and its next attempts.
  let pauses = 0;
  if (failing) {
    const last = o.posts.find((r) => r.at === lastCall)!;
    const calls = byNode.get(last.node)!;
    for (let i = 1; i < calls.length; i++) {
      pauses += calls[i]!.at - (calls[i - 1]!.answeredAt ?? calls[i - 1]!.at);
    }
    report(
      `${p}the last call's target: its pauses before attempts 2… (backoff 1 s, 2 s)`,
      s(pauses),
      "s",
    );
    report(
      `${p}(a) beyond the stages' own waits and those pauses`,
      a - s(stageWaits + pauses),
      "s",
    );
  }
  const downs = [...o.downAt.values()].filter((at): at is number => at !== null);
  const verify = o.visits.filter((v) => v.step === "VerifyTargetsDown");
  const seen = o.calls.flatMap((c) => (c.seenDownAt === null ? [] : [c.seenDownAt]));
  report(
    `${p}(b) trigger → every node down at the lab (its last power-off)`,
    since(max(downs)),
    "s",
  );
  report(
    `${p}(b) trigger → every target seen down by the console (VerifyTargetsDown succeeded)`,
    o.run.status === "succeeded" && verify.length > 0 ? since(verify.at(-1)!.finishedAt) : NaN,
    "s",
  );
  report(
    `${p}trigger → the last target.down event`,
    o.lastTargetDownEventAt === null ? NaN : since(o.lastTargetDownEventAt),
    "s",
  );
  report(`${p}trigger → the latest seen_down_at`, since(max(seen)), "s");
  const everyDown = downs.length === setup.targets && o.run.status === "succeeded";
  console.log(
    `${p}every target down: ${everyDown ? "yes" : "NO"} (${downs.length} of ${setup.targets} nodes powered off at the lab; ${o.targetDownEvents} target.down events; run ${o.run.status})`,
  );
  const met = everyDown && a - s(stageWaits + pauses) <= 2;
  console.log(
    `${p}goal, trigger → last call ≤ 2 s beyond the stages' own waits${failing ? " (and the retry pauses)" : ""}, every target down: ${met ? "met" : "NOT met"}`,
  );

  // Attempts, at the lab and as the console recorded them.
  report(`${p}shutdown calls received by the lab`, o.posts.length, "calls");
  report(`${p}targets called`, byNode.size, "targets");
  const callsPerTarget = [...byNode.values()].map((calls) => calls.length);
  for (const n of [...new Set(callsPerTarget)].sort()) {
    report(
      `${p}targets called ${n} time(s) at the lab`,
      callsPerTarget.filter((c) => c === n).length,
      "targets",
    );
  }
  if (failing) {
    const statuses = [...o.faulty].map((name) =>
      (byNode.get(name) ?? []).map((r) => r.status).join(","),
    );
    console.log(
      `${p}failing targets' calls at the lab: ${[...new Set(statuses)].map((st) => `${statuses.filter((x) => x === st).length} × [${st}]`).join(", ")}`,
    );
    const recorded = [...o.faulty].map((name) =>
      o.calls
        .filter((c) => c.targetName === name)
        .map((c) => `${c.attempt}:${c.state}`)
        .join(","),
    );
    console.log(
      `${p}failing targets' calls recorded by the console: ${[...new Set(recorded)].map((r) => `${recorded.filter((x) => x === r).length} × [${r}]`).join(", ")}`,
    );
  }
  report(`${p}calls recorded by the console`, o.calls.length, "calls");

  // Where the time goes: the run's visits against the lab's calls.
  const plan = o.visits.find((v) => v.step === "PlanShutdown");
  const sends = o.visits.filter((v) => v.step === "ShutDownTargets");
  if (plan) {
    report(
      `${p}trigger → PlanShutdown started (run started, first pick-up)`,
      since(plan.startedAt),
      "s",
    );
    report(`${p}PlanShutdown's visit`, s(plan.finishedAt - plan.startedAt), "s");
  }
  const inVisit = (v: Visit) => o.posts.filter((r) => r.at >= v.startedAt && r.at <= v.finishedAt);
  const gaps = sends.slice(1).map((v, i) => v.startedAt - sends[i]!.finishedAt);
  const withCalls = sends.filter((v) => inVisit(v).length > 0);
  report(`${p}ShutDownTargets visits`, sends.length, "visits");
  report(
    `${p}ShutDownTargets visits, Σ`,
    s(sum(sends.map((v) => v.finishedAt - v.startedAt))),
    "s",
  );
  report(
    `${p}ShutDownTargets visit, median`,
    s(median(sends.map((v) => v.finishedAt - v.startedAt))),
    "s",
  );
  report(
    `${p}ShutDownTargets visit, max`,
    s(max(sends.map((v) => v.finishedAt - v.startedAt))),
    "s",
  );
  report(`${p}between two ShutDownTargets visits (engine: persist, pick-up), Σ`, s(sum(gaps)), "s");
  report(`${p}the run's context (read and written by every tick)`, o.contextBytes / 1024, "KiB");
  report(`${p}between two ShutDownTargets visits, median`, s(median(gaps)), "s");
  report(
    `${p}a visit's start → its first call at the lab, median`,
    s(median(withCalls.map((v) => min(inVisit(v).map((r) => r.at)) - v.startedAt))),
    "s",
  );
  report(
    `${p}a visit's first → last call at the lab, median`,
    s(
      median(
        withCalls.map((v) => max(inVisit(v).map((r) => r.at)) - min(inVisit(v).map((r) => r.at))),
      ),
    ),
    "s",
  );
  report(
    `${p}a visit's last call at the lab → the visit's end, median`,
    s(median(withCalls.map((v) => v.finishedAt - max(inVisit(v).map((r) => r.at))))),
    "s",
  );
  const lastSend = sends.at(-1);
  if (lastSend && verify.length > 0) {
    report(
      `${p}ShutDownTargets done → VerifyTargetsDown started (6 steps without a cluster)`,
      s(verify[0]!.startedAt - lastSend.finishedAt),
      "s",
    );
    report(`${p}VerifyTargetsDown visits`, verify.length, "visits");
    report(
      `${p}VerifyTargetsDown visit, max`,
      s(max(verify.map((v) => v.finishedAt - v.startedAt))),
      "s",
    );
    report(
      `${p}VerifyTargetsDown visit, median`,
      s(median(verify.map((v) => v.finishedAt - v.startedAt))),
      "s",
    );
  }
  // One call's way through its visit: the console's claim (its transaction's start) and
  // settle against the lab's arrival and answer (the k-th call of a node is its attempt k).
  const phases: { claim: number; toLab: number; answer: number; settle: number; end: number }[] =
    [];
  for (const v of sends) {
    for (const call of o.calls.filter(
      (c) => c.startedAt >= v.startedAt && c.startedAt <= v.finishedAt,
    )) {
      const post = byNode.get(call.targetName)?.[call.attempt - 1];
      if (!post || post.answeredAt === null || call.finishedAt === null) continue;
      phases.push({
        claim: call.startedAt - v.startedAt,
        toLab: post.at - call.startedAt,
        answer: post.answeredAt - post.at,
        settle: call.finishedAt - post.answeredAt,
        end: v.finishedAt - call.finishedAt,
      });
    }
  }
  for (const [key, what] of [
    ["claim", "a call: its visit's start → its claim's transaction began"],
    ["toLab", "a call: claim began → the call at the lab (claim, timeline bar, token, TLS)"],
    ["answer", "a call: at the lab → answered"],
    ["settle", "a call: answered → its settle began"],
    ["end", "a call: its settle began → the visit's end"],
  ] as const) {
    const values = phases.map((ph) => ph[key]);
    report(`${p}${what}, median / max`, s(median(values)), `s / ${s(max(values)).toFixed(2)} s`);
  }
  for (const v of o.visits) {
    const calls = inVisit(v);
    console.error(
      `bench: ${p}${v.step} visit ${v.visit}: ${since(v.startedAt).toFixed(2)} → ${since(v.finishedAt).toFixed(2)} s, ${calls.length} calls at the lab${calls.length > 0 ? ` from ${since(min(calls.map((r) => r.at))).toFixed(2)} to ${since(max(calls.map((r) => r.at))).toFixed(2)} s` : ""} (${v.outcome})`,
    );
  }
  const flipToEnd = s(max(o.visits.map((v) => v.finishedAt)) - o.flippedAt);
  report(`${p}outage, flip → run ended`, flipToEnd, "s");
  const lastSendEnd = sends.at(-1)?.finishedAt ?? NaN;
  if (o.sends) {
    const w = o.sends.worker;
    const q = `${p}the calls (flip → ShutDownTargets done, ${s(lastSendEnd - o.flippedAt).toFixed(1)} s)`;
    const cpu = w.cpuSeconds + o.sends.labCpuSeconds + (o.sends.postgresCpuSeconds ?? NaN);
    report(
      `${q}: CPU, worker + lab + Postgres`,
      cpu,
      `s (${w.cpuSeconds.toFixed(1)} + ${o.sends.labCpuSeconds.toFixed(1)} + ${(o.sends.postgresCpuSeconds ?? NaN).toFixed(1)})`,
    );
    const sent = o.posts.filter((r) => r.at <= lastSendEnd).length;
    report(
      `${q}: CPU per call sent, worker / lab / Postgres`,
      (1000 * w.cpuSeconds) / sent,
      `ms / ${((1000 * o.sends.labCpuSeconds) / sent).toFixed(1)} ms / ${((1000 * (o.sends.postgresCpuSeconds ?? NaN)) / sent).toFixed(1)} ms`,
    );
    report(
      `${q}: worker event-loop delay p99 / max`,
      w.loopDelayP99Ms,
      `ms / ${w.loopDelayMaxMs.toFixed(0)} ms`,
    );
    for (const [scope, stats] of Object.entries(w.byScope)) {
      report(
        `${q}: worker queries (${scope === "other" ? "graphile-worker, monitor" : scope}): count / waited for a pooled connection Σ / max`,
        stats.queries,
        `queries / ${s(stats.poolWaitMs).toFixed(1)} s / ${stats.maxPoolWaitMs.toFixed(0)} ms`,
      );
    }
    report(`${q}: step queries per call sent`, w.byScope.step.queries / sent, "queries");
    for (const [text, n] of w.stepStatements.slice(0, 12)) {
      report(`${q}: step statement ${JSON.stringify(text)}`, n, "times");
    }
  }
  const r = `${p}after the calls (→ the run's end)`;
  report(`${r}: worker CPU`, o.worker.cpuSeconds, "s");
  report(
    `${r}: worker event-loop delay p99 / max`,
    o.worker.loopDelayP99Ms,
    `ms / ${o.worker.loopDelayMaxMs.toFixed(0)} ms`,
  );
  report(
    `${r}: worker step queries / waited for a pooled connection Σ`,
    o.worker.byScope.step.queries,
    `queries / ${s(o.worker.byScope.step.poolWaitMs).toFixed(1)} s`,
  );
  report(`${r}: lab CPU`, o.labCpuSeconds - (o.sends?.labCpuSeconds ?? 0), "s");
  report(
    `${r}: Postgres CPU`,
    (o.postgresCpuSeconds ?? NaN) - (o.sends?.postgresCpuSeconds ?? 0),
    "s",
  );
}
