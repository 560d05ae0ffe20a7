/**
 * `npm run bench:cluster -- [--guests 60] [--guest-seconds 5] [--parallelism N]`: how long the
 * console's cluster sequence takes to bring a hyper-converged 3-node lab cluster down — from the
 * trigger to the last node off — side by side with the bounds it is judged against:
 *
 * - sequential bound: every guest's clean shutdown one after another (60 × 5 s = 300 s);
 * - parallel lower bound at the chosen parallelism: ⌈guests / parallelism⌉ rounds of one guest
 *   shutdown each (the guest step cannot be faster; the HA, Ceph and node steps come on top);
 * - goal: ≤ 1.2 × the parallel bound (reported, never asserted).
 *
 * The real product path: the power-shutdown pipeline (PlanShutdown … ShutDownClusterNodes) on an
 * in-process worker against `startLabCluster` over HTTPS (3 nodes sharing one pmxcfs, Ceph with
 * monitors on pve2 and pve3, pool size 3 / min_size 2, every guest on Ceph, a third of them HA),
 * armed, each node an active host found as one cluster by the console's own discovery.
 * Time zero: the commit of the run a fired trigger starts (what the power monitor does). The end:
 * the moment the lab saw its last node lose power (polled every 20 ms). The timeline's recorded
 * actions give each phase's share.
 */
import { CONSOLE_PRIVILEGE_NAMES } from "@/lib/proxmox/console-identity";
import crypto from "node:crypto";
import { parseArgs } from "node:util";
import { startLabCluster, type LabCluster } from "@/lab";
import type { LabGuestSpec } from "@/lab/pve/cluster/model";
import type { AuditActor } from "@/lib/audit/record-audit";
import { asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { migrateDatabase } from "@/lib/db/migrate";
import { stepVisits } from "@/lib/db/schema";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { refreshClusterGroups } from "@/lib/power/cluster-refresh/refresh-cluster-groups";
import { seedActiveLabHost } from "@/test/fixtures/active-lab-host";
import { createPowerTarget } from "@/lib/power/operations/power-targets";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { DEFAULT_POWER_SETTINGS } from "@/lib/power/config/settings";
import { powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { createUpsDevice } from "@/lib/power/operations/ups-devices";
import { settled } from "@/test/runs";
import { startWorker } from "@/worker/runner";
import { openBenchDb, startBenchPostgres } from "./support/postgres";
import { report } from "./support/report";
import { BenchCannotRun, runBench, startUntilEnd, stopAtEnd } from "./support/run-bench";

const USAGE = `Usage: npm run bench:cluster -- [--guests N] [--guest-seconds S] [--parallelism P]`;
const ACTOR: AuditActor = { userId: null, name: "bench" };
const NODES = ["pve1", "pve2", "pve3"];

function guests(count: number, shutdownMs: number): LabGuestSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    vmid: 100 + i,
    type: i % 2 === 0 ? "qemu" : "lxc",
    node: NODES[i % NODES.length]!,
    storage: "ceph",
    ha: i % 3 === 0,
    shutdownMs,
  }));
}

function options() {
  const { values } = parseArgs({
    options: {
      guests: { type: "string", default: "60" },
      "guest-seconds": { type: "string", default: "5" },
      parallelism: {
        type: "string",
        default: String(DEFAULT_POWER_SETTINGS.shutdown.guestParallelism),
      },
    },
  });
  const count = Number(values.guests);
  const guestSeconds = Number(values["guest-seconds"]);
  const parallelism = Number(values.parallelism);
  if (!Number.isInteger(count) || count < 1)
    throw new BenchCannotRun(`--guests: a whole number ≥ 1\n${USAGE}`);
  if (!(guestSeconds > 0)) throw new BenchCannotRun(`--guest-seconds: a number > 0\n${USAGE}`);
  if (!Number.isInteger(parallelism) || parallelism < 1 || parallelism > 64)
    throw new BenchCannotRun(`--parallelism: a whole number from 1 to 64\n${USAGE}`);
  return { count, guestSeconds, parallelism };
}

/** Resolves with the moment (performance.now) the last of the lab's nodes lost power. */
async function lastNodeOff(lab: LabCluster, deadlineMs: number): Promise<number> {
  const deadline = performance.now() + deadlineMs;
  for (;;) {
    const now = performance.now();
    if (NODES.every((name) => lab.model.node(name)?.online === false)) return now;
    if (now > deadline) {
      const up = NODES.filter((name) => lab.model.node(name)?.online !== false);
      throw new Error(`still up after ${deadlineMs / 1000} s: ${up.join(", ")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** From one step's advancing visit to the next step's first visit: the engine's share. */
async function reportHandOvers(db: Database, runId: string): Promise<void> {
  const visits = await db
    .select()
    .from(stepVisits)
    .where(eq(stepVisits.runId, runId))
    .orderBy(asc(stepVisits.startedAt), asc(stepVisits.id));
  const steps = [...new Set(visits.map((v) => v.step))];
  for (const step of steps) {
    const own = visits.filter((v) => v.step === step);
    const spent = own.reduce((sum, v) => sum + (v.finishedAt.getTime() - v.startedAt.getTime()), 0);
    report(`  ${step}: ${own.length} visit(s), in them`, spent / 1000, "s");
  }
  let total = 0;
  for (const [i, visit] of visits.entries()) {
    const previous = visits[i - 1];
    if (!previous || previous.outcome !== "advance" || visit.step === previous.step) continue;
    const gap = (visit.startedAt.getTime() - previous.finishedAt.getTime()) / 1000;
    total += gap;
    report(`  hand-over ${previous.step} → ${visit.step}`, gap, "s");
  }
  report("step hand-overs in total", total, "s");
}

async function main() {
  const { count, guestSeconds, parallelism } = options();
  const benchStarted = performance.now();
  // Credentials are sealed with a key of the bench's own, never the console's .data/secret.key.
  process.env.CLUPILOT_SECRET_KEY ??= crypto.randomBytes(32).toString("hex");
  const pg = await startBenchPostgres("cluster");
  const url = await pg.createDatabase("clupilot");
  await migrateDatabase(url);
  const { db } = openBenchDb(url, 4);
  const lab = await startUntilEnd(
    "lab cluster",
    startLabCluster({
      nodes: NODES,
      name: "bench",
      guests: guests(count, guestSeconds * 1000),
      ceph: { monitors: ["pve2", "pve3"] },
      apiAuthFailureDelayMs: 50,
    }),
    (started) => started.stop(),
  );
  const worker = await startWorker({
    connectionString: url,
    pipelines: { [powerShutdownPipeline.name]: powerShutdownPipeline },
    concurrency: 2,
    pollIntervalMs: 100,
    periodicChecks: false,
    log: () => {},
  });
  stopAtEnd("worker", () => worker.stop());

  const token = lab.addToken("console", [...CONSOLE_PRIVILEGE_NAMES]);
  // No upsd behind it (the bench never reads this UPS): saved without trying the login.
  const ups = await createUpsDevice(
    db,
    { name: "bench-ups", source: { type: "nut", host: "127.0.0.1", port: 3493, upsName: "ups" } },
    ACTOR,
    { checkSource: async () => {} },
  );
  const targetIds: string[] = [];
  for (const node of lab.nodes) {
    const hostId = await seedActiveLabHost(db, {
      nodeName: node.name,
      port: node.api.port,
      certSha256: node.api.certSha256,
      token,
    });
    const target = await createPowerTarget(
      db,
      { kind: "pve-node", hostId, feeds: [ups.id], feedPolicy: "any" },
      ACTOR,
    );
    targetIds.push(target.id);
  }
  if ((await refreshClusterGroups(db, { all: true })) === 0)
    throw new Error("the console's discovery found no cluster among the lab's nodes");
  await updatePowerSettings(
    db,
    {
      shutdown: {
        guestParallelism: parallelism,
        guestTimeoutSeconds: Math.max(5, Math.ceil(guestSeconds * 4)),
        targetDownSeconds: 60,
      },
    },
    ACTOR,
  );
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: targetIds }, ACTOR);

  const now = new Date().toISOString();
  const t0 = performance.now();
  const t0Wall = Date.now();
  const runId = await db.transaction((tx) =>
    startShutdownRun(tx, {
      trigger: {
        upsId: ups.id,
        upsName: "bench-ups",
        trigger: "low_battery",
        reason: "the UPS reports low battery (bench)",
        latchedAt: now,
      },
      targets: targetIds.map((targetId) => ({ targetId, dueSince: now })),
    }),
  );
  const sequential = count * guestSeconds;
  const parallelBound = Math.ceil(count / parallelism) * guestSeconds;
  const off = await lastNodeOff(lab, (sequential + 120) * 1000);
  const run = await settled(db, runId, 120_000);

  console.log(
    `bench:cluster — ${NODES.length} lab nodes (Ceph, monitors pve2+pve3), ${count} guests × ${guestSeconds} s clean shutdown, parallelism ${parallelism}; run ${run.status}${run.failureReason ? `: ${run.failureReason}` : ""}`,
  );
  const actions = await actionsOfRun(db, runId);
  let previousEnd = t0Wall;
  for (const action of actions) {
    if (!action.finishedAt) continue;
    const took = (action.finishedAt.getTime() - action.startedAt.getTime()) / 1000;
    if (/^(shutdown|force-stop) (qemu|lxc) /.test(action.label)) continue;
    // The time no action of the sequence was under way: planning, hand-overs, bookkeeping.
    const gap = (action.startedAt.getTime() - previousEnd) / 1000;
    report(`  before ${action.lane}: ${action.label}, nothing under way`, Math.max(0, gap), "s");
    report(`  ${action.lane}: ${action.label} (${action.outcome})`, took, "s");
    previousEnd = Math.max(previousEnd, action.finishedAt.getTime());
  }
  await reportHandOvers(db, runId);
  report("trigger to last node off", (off - t0) / 1000, "s");
  report("sequential bound (guests one after another)", sequential, "s");
  report(`parallel lower bound at parallelism ${parallelism}`, parallelBound, "s");
  report("goal (≤ 1.2 × the parallel bound)", 1.2 * parallelBound, "s");
  report("ratio to the parallel bound", (off - t0) / 1000 / parallelBound, "×");
  report("benchmark took", (performance.now() - benchStarted) / 1000, "s");
}

runBench(main);
