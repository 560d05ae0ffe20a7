/**
 * `npm run bench:power-back -- [--boot-seconds 6] [--guest-start-seconds 1] [--parallelism P]`:
 * how long the console's way back (issue 30) takes to bring a hyper-converged 3-node lab cluster
 * with 60 guests back — from the moment the policy holds to the last guest running — beside the
 * lower bound no console can beat on that lab:
 *
 *   bound = node boot + quorum + Σ over the startup orders of ⌈n / P⌉ × (start + up)
 *           − the last order's up (nothing waits for it)
 *
 * where n is an order's guests, P the configured guest parallelism, start the lab's `qm start`
 * time and up the order's up-delay (guests without an order last, as Proxmox's startall does;
 * lib/power/power-back/start-order.ts). The boot is the lab BMC's (every node boots at once at
 * best); quorum is 0 s in the lab (its corosync is quorate the moment two of three are online),
 * and so are Ceph's placement groups settling and HA's re-arm. Goal: ≤ 1.2 × the bound
 * (reported, never asserted).
 *
 * The real product path: the nodes protected as in lib/power/power-back/power-back.int.test.ts
 * (a lab cluster over HTTPS, Ceph monitors on pve2 and pve3, each node with a lab Redfish BMC
 * that switches its lab power), an armed outage taken to its end by the power-shutdown pipeline
 * (not timed), then the UPS on mains for the policy's minutes with runtime enough, and the
 * power monitor's own watchPowerBack starts the power-back run on the worker. Time zero: just
 * before that call (the policy holds). The end: the moment the lab saw the last guest that ran
 * before the outage running again (polled every 20 ms). Where the time goes: the run's actions,
 * steps and hand-overs, and per startup order its span beside its share of the bound.
 */
import crypto from "node:crypto";
import os from "node:os";
import { parseArgs } from "node:util";
import { asc, eq } from "drizzle-orm";
import { startLabCluster, type LabCluster } from "@/lab";
import {
  clusterNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import type { LabGuestSpec } from "@/lab/pve/cluster/model";
import type { Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { runs, stepVisits } from "@/lib/db/schema";
import { DEFAULT_POWER_SETTINGS } from "@/lib/power/config/settings";
import { watchPowerBack } from "@/lib/power/monitor/power-back-watch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { powerBackPipeline, POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { outageToBringBack } from "@/lib/power/power-back-pipeline/start-power-back";
import { startBatches } from "@/lib/power/power-back/start-order";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { parseStartup } from "@/lib/power/records/startup-order";
import { powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { ADMIN, persistOnMains, persistReading, shutdownInput } from "@/test/fixtures/power";
import { giveLabRedfish } from "@/test/fixtures/lab-bmc";
import { protectLabCluster } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import { startWorker } from "@/worker/runner";
import { openBenchDb, startBenchPostgres } from "./support/postgres";
import { report } from "./support/report";
import { BenchCannotRun, runBench, startUntilEnd, stopAtEnd } from "./support/run-bench";

const USAGE = `Usage: npm run bench:power-back -- [--boot-seconds S] [--guest-start-seconds S] [--parallelism P]`;
const NODES = ["pve1", "pve2", "pve3"];
const GUESTS = 60;
/**
 * The startup orders of the 60 guests, as a small site sets them: the storage and database
 * guests first with the longest up-delay, then application servers, then front ends, and most
 * guests with no order at all (started last, as Proxmox's startall does). Up-delays in seconds,
 * scaled like the lab's other times (real ones are 30–120 s).
 */
const ORDERS: { order: number | null; up: number | null; count: number }[] = [
  { order: 1, up: 3, count: 3 },
  { order: 2, up: 2, count: 6 },
  { order: 3, up: 1, count: 9 },
  { order: null, up: null, count: 42 },
];

function guests(): LabGuestSpec[] {
  const specs: LabGuestSpec[] = [];
  for (const group of ORDERS) {
    for (let k = 0; k < group.count; k++) {
      const i = specs.length;
      const startup =
        group.order === null
          ? undefined
          : `order=${group.order}${group.up === null ? "" : `,up=${group.up}`}`;
      specs.push({
        vmid: 100 + i,
        type: i % 2 === 0 ? "qemu" : "lxc",
        node: NODES[i % NODES.length]!,
        storage: "ceph",
        ha: i % 6 === 0,
        ...(startup === undefined ? {} : { startup }),
      });
    }
  }
  if (specs.length !== GUESTS) throw new Error(`the mix has ${specs.length} guests`);
  return specs;
}

function options() {
  const { values } = parseArgs({
    options: {
      "boot-seconds": { type: "string", default: "6" },
      "guest-start-seconds": { type: "string", default: "1" },
      parallelism: {
        type: "string",
        default: String(DEFAULT_POWER_SETTINGS.shutdown.guestParallelism),
      },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const bootSeconds = Number(values["boot-seconds"]);
  const startSeconds = Number(values["guest-start-seconds"]);
  const parallelism = Number(values.parallelism);
  if (!(bootSeconds >= 0)) throw new BenchCannotRun(`--boot-seconds: a number ≥ 0\n${USAGE}`);
  if (!(startSeconds > 0))
    throw new BenchCannotRun(`--guest-start-seconds: a number > 0\n${USAGE}`);
  if (!Number.isInteger(parallelism) || parallelism < 1 || parallelism > 64)
    throw new BenchCannotRun(`--parallelism: a whole number from 1 to 64\n${USAGE}`);
  return { bootSeconds, startSeconds, parallelism };
}

type Term = {
  order: number | null;
  up: number;
  vmids: number[];
  rounds: number;
  seconds: number;
};

/** A spec's startup order and up-delay, read as the console reads a guest's config. */
function startupOf(spec: LabGuestSpec) {
  const { order, up } = parseStartup(spec.startup);
  return { vmid: spec.vmid, order, up };
}

/** The guests' share of the bound, per startup order (the batches the product starts). */
function guestTerms(specs: LabGuestSpec[], startSeconds: number, parallelism: number): Term[] {
  const batches = startBatches(specs.map(startupOf));
  return batches.map((batch, i) => {
    const up = batch[0]!.up ?? 0;
    const rounds = Math.ceil(batch.length / parallelism);
    // The last order's up-delay holds nothing back: its last guest running is the end.
    const last = i === batches.length - 1;
    const seconds = rounds * (startSeconds + up) - (last ? up : 0);
    return { order: batch[0]!.order, up, vmids: batch.map((g) => g.vmid), rounds, seconds };
  });
}

/**
 * Watches the lab every 20 ms: when each node came online and each guest read running
 * (performance.now), until `stop`.
 */
function watchLab(lab: LabCluster) {
  const nodeOn = new Map<string, number>();
  const guestRunning = new Map<number, number>();
  const timer = setInterval(() => {
    const now = performance.now();
    for (const node of lab.model.nodes)
      if (node.online && !nodeOn.has(node.name)) nodeOn.set(node.name, now);
    for (const guest of lab.model.guests.values())
      if (guest.status === "running" && !guestRunning.has(guest.vmid))
        guestRunning.set(guest.vmid, now);
  }, 20);
  return { nodeOn, guestRunning, stop: () => clearInterval(timer) };
}

async function reportSteps(db: Database, runId: string, at: (d: Date) => number): Promise<void> {
  const visits = await db
    .select()
    .from(stepVisits)
    .where(eq(stepVisits.runId, runId))
    .orderBy(asc(stepVisits.startedAt), asc(stepVisits.id));
  const steps = [...new Set(visits.map((v) => v.step))];
  for (const step of steps) {
    const own = visits.filter((v) => v.step === step);
    const spent = own.reduce((sum, v) => sum + (v.finishedAt.getTime() - v.startedAt.getTime()), 0);
    const from = at(own[0]!.startedAt);
    const to = at(own.at(-1)!.finishedAt);
    report(
      `  ${step}: ${own.length} visit(s), ${from.toFixed(2)} s → ${to.toFixed(2)} s, in them`,
      spent / 1000,
      "s",
    );
  }
  let total = 0;
  let count = 0;
  for (const [i, visit] of visits.entries()) {
    const previous = visits[i - 1];
    if (!previous) continue;
    total += (visit.startedAt.getTime() - previous.finishedAt.getTime()) / 1000;
    count++;
  }
  report(`  between visits (polls and hand-overs), ${count} gaps in all`, total, "s");
}

async function main() {
  const { bootSeconds, startSeconds, parallelism } = options();
  const benchStarted = performance.now();
  const loadAtStart = os.loadavg()[0]!;
  // Credentials are sealed with a key of the bench's own, never the console's .data/secret.key.
  process.env.CLUPILOT_SECRET_KEY ??= crypto.randomBytes(32).toString("hex");
  const pg = await startBenchPostgres("power-back");
  const url = await pg.createDatabase("clupilot");
  await migrateDatabase(url);
  const { db } = openBenchDb(url, 4);
  const specs = guests();
  const lab = await startUntilEnd(
    "lab cluster",
    startLabCluster({
      nodes: NODES,
      name: "bench-back",
      guests: specs,
      ceph: { monitors: ["pve2", "pve3"] },
      timing: {
        guestShutdownMs: 100,
        haDisarmMs: 100,
        haRecoveryMs: 100,
        nodeShutdownDelayMs: 100,
        guestStartMs: startSeconds * 1000,
      },
      apiAuthFailureDelayMs: 50,
    }),
    (started) => started.stop(),
  );
  const bmc: LabPowerControllers = await startUntilEnd(
    "lab BMCs",
    startLabPowerControllers({ nodes: lab.nodes.map((n) => clusterNodePower(lab, n.name)) }),
    (started) => started.stop(),
  );
  for (const node of bmc.nodes) node.chassis.faults.bootMs = bootSeconds * 1000;
  const worker = await startWorker({
    connectionString: url,
    pipelines: {
      [powerShutdownPipeline.name]: powerShutdownPipeline,
      [powerBackPipeline.name]: powerBackPipeline,
    },
    concurrency: 2,
    pollIntervalMs: 100,
    periodicChecks: false,
    log: () => {},
  });
  stopAtEnd("worker", () => worker.stop());

  const { upsId, targets } = await protectLabCluster(db, lab);
  await giveLabRedfish(db, targets, bmc, "bench");
  await updatePowerSettings(
    db,
    {
      shutdown: {
        callTimeoutSeconds: 3,
        targetDownSeconds: 15,
        guestTimeoutSeconds: 5,
        guestParallelism: parallelism,
      },
      powerBack: { mainsStableMinutes: 1, minChargePercent: 50 },
    },
    ADMIN,
  );
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: Object.values(targets) }, ADMIN);

  // The outage, not timed: the armed shutdown of the cluster to its end.
  await persistReading(db, upsId, true);
  const shutdownRunId = await db.transaction((tx) =>
    startShutdownRun(tx, shutdownInput(upsId, Object.values(targets))),
  );
  const shutdown = await settled(db, shutdownRunId, 120_000);
  if (shutdown.status !== "succeeded")
    throw new Error(`the outage's shutdown run ${shutdown.status}: ${shutdown.failureReason}`);
  if (lab.model.nodes.some((n) => n.online))
    throw new Error("a lab node is still on after the shutdown");
  const outage = await outageToBringBack(db, new Date());
  if (!outage) throw new Error("the console sees no outage to come back from");

  // The policy holds: mains for its minute, runtime enough for the shutdown again.
  await persistOnMains(db, upsId, {
    mainsMs: 60_000,
    chargePercent: 80,
    runtimeSeconds: outage.budgetSeconds + 60,
    rawStatus: "OL CHRG",
  });
  const watch = watchLab(lab);
  stopAtEnd("lab watch", () => watch.stop());
  const t0 = performance.now();
  const t0Wall = Date.now();
  const sinceT0 = (d: Date) => (d.getTime() - t0Wall) / 1000;
  await watchPowerBack(db, new Date(), () => {});
  const [run] = await db
    .select({ id: runs.id, createdAt: runs.createdAt })
    .from(runs)
    .where(eq(runs.pipeline, POWER_BACK));
  if (!run) throw new Error("the policy held but no power-back run started");
  const vmids = specs.map((g) => g.vmid);
  const deadline = t0 + 180_000;
  while (!vmids.every((v) => watch.guestRunning.has(v))) {
    if (performance.now() > deadline) {
      const missing = vmids.filter((v) => !watch.guestRunning.has(v));
      throw new Error(
        `not running after 180 s: ${missing.length} guest(s), ${missing.slice(0, 10).join(", ")}…`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const end = Math.max(...vmids.map((v) => watch.guestRunning.get(v)!));
  const back = await settled(db, run.id, 120_000);
  watch.stop();

  const terms = guestTerms(specs, startSeconds, parallelism);
  const quorumSeconds = 0;
  const bound = bootSeconds + quorumSeconds + terms.reduce((sum, t) => sum + t.seconds, 0);
  const measured = (end - t0) / 1000;
  const [load1, load5] = os.loadavg();

  console.log(
    `bench:power-back — ${NODES.length} lab nodes (Ceph, monitors pve2+pve3, Redfish BMCs), ${GUESTS} guests, node boot ${bootSeconds} s, guest start ${startSeconds} s, parallelism ${parallelism}; run ${back.status}${back.failureReason ? `: ${back.failureReason}` : ""}`,
  );
  console.log(
    "bound = node boot + quorum + Σ over the startup orders of ⌈n / parallelism⌉ × (start + up) − the last order's up",
  );
  // Where the time goes: the run's actions (guest starts summed per order below).
  report("  policy holds → power-back run created", sinceT0(run.createdAt), "s");
  const actions = await actionsOfRun(db, run.id);
  for (const action of actions) {
    if (/^start (qemu|lxc) /.test(action.label) || !action.finishedAt) continue;
    report(
      `  ${action.lane}: ${action.label} (${action.outcome}) at ${sinceT0(action.startedAt).toFixed(2)} s, took`,
      (action.finishedAt.getTime() - action.startedAt.getTime()) / 1000,
      "s",
    );
  }
  for (const node of NODES) {
    const on = watch.nodeOn.get(node);
    report(`  ${node} online at the lab`, on === undefined ? NaN : (on - t0) / 1000, "s");
  }
  const starts = new Map(lab.model.guestStarts.map((s) => [s.vmid, s.at]));
  let previousEnd: number | null = null;
  for (const [i, term] of terms.entries()) {
    const last = i === terms.length - 1;
    const first = Math.min(...term.vmids.map((v) => starts.get(v) ?? NaN)) - t0Wall;
    const lastRunning = Math.max(...term.vmids.map((v) => watch.guestRunning.get(v)!)) - t0;
    const doneAt = lastRunning / 1000 + (last ? 0 : term.up);
    const name = term.order === null ? "without an order" : `order ${term.order}`;
    if (previousEnd !== null)
      report(`  guests ${name}: gap after the order before`, first / 1000 - previousEnd, "s");
    report(
      `  guests ${name} (${term.vmids.length}, up ${term.up} s): first start at ${(first / 1000).toFixed(2)} s → last running${last ? "" : " + up"} (bound ${term.seconds} s)`,
      doneAt - first / 1000,
      "s",
    );
    previousEnd = doneAt;
  }
  await reportSteps(db, run.id, sinceT0);
  report("bound: node boot (the lab BMC's)", bootSeconds, "s");
  report("bound: quorum (the lab: quorate once two of three are online)", quorumSeconds, "s");
  for (const term of terms) {
    report(
      `bound: guests ${term.order === null ? "without an order" : `of order ${term.order}`} (${term.vmids.length}: ${term.rounds} round(s) × (${startSeconds} + ${term.up}) s)`,
      term.seconds,
      "s",
    );
  }
  report("policy holds → last guest running", measured, "s");
  report("lower bound", bound, "s");
  report("goal (≤ 1.2 × the bound)", 1.2 * bound, "s");
  report("ratio to the bound", measured / bound, "×");
  console.log(`goal: ${measured <= 1.2 * bound ? "met" : "NOT met"}`);
  report("load average at the start (1 min)", loadAtStart, "");
  report("load average at the end (1 min)", load1!, "");
  report("load average at the end (5 min)", load5!, "");
  report("benchmark took", (performance.now() - benchStarted) / 1000, "s");
}

runBench(main);
