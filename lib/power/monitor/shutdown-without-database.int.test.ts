import { and, asc, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import {
  powerEvents,
  powerSettings,
  powerShutdownCalls,
  runs,
  upsMonitorState,
} from "@/lib/db/schema";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps } from "@/lab/ups/lab-ups";
import {
  addUps,
  ADMIN,
  nutSourceOf,
  onboardedLabNode,
  protectHost,
  setModeConfirmingAll,
} from "@/test/fixtures/power";
import { startPowerTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { waitFor } from "@/test/worker-process";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * The database is not in the critical path: the monitor holds the armed plan in memory, and when
 * the trigger fires while PostgreSQL is gone (killed -9 and kept down) it still shuts every
 * target down — seen down, as a run would — and records what it did, exactly once, when the
 * database is back. A failure of the trigger path other than the database being away is a
 * critical event, and the shutdown goes out all the same.
 */

let postgres: RestartablePostgres;
let handle: ReturnType<typeof createDb>;
let db: Database;
let monitor: PowerMonitor;
const started: Array<{ stop(): Promise<void> }> = [];
const lines: string[] = [];

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  handle = createDb(postgres.url, 2, trackReachability({ log: () => {}, meanwhile: "" }));
  db = handle.db;
  await updatePowerSettings(
    db,
    {
      triggers: {
        runtimeBelowSeconds: null,
        chargeBelowPercent: null,
        onBatteryForSeconds: null,
      },
      shutdown: { callTimeoutSeconds: 5, targetDownSeconds: 30 },
    },
    ADMIN,
  );
  monitor = await startPowerMonitor({
    connectionString: postgres.url,
    supervisorIntervalMs: 300,
    log: (line) => lines.push(line),
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await Promise.all(started.map((s) => s.stop()));
  await handle?.pool.end();
  await postgres?.close();
});

/**
 * A UPS and its protected lab nodes, onboarded by a worker that is stopped again before the
 * test takes PostgreSQL away: nothing after needs one (the monitor acts without the database,
 * and records without the engine), and a job finishing while PostgreSQL is killed leaves
 * graphile-worker's unawaited failJob rejecting — the worker process's guard handles that in
 * production (worker/process-guard.ts); in a test process it would count as an error.
 */
async function fleet(name: string, stages: number) {
  const worker = await startPowerTestWorker({ url: postgres.url });
  try {
    return await fleetWith(name, stages);
  } finally {
    await worker.stop();
  }
}

async function fleetWith(name: string, stages: number) {
  const ups = await startLabUps({ name, snmp: false });
  started.push(ups);
  const upsId = await addUps(db, name, nutSourceOf(ups));
  const nodes: Array<{ node: LabNode; targetId: string }> = [];
  for (let stage = 0; stage < stages; stage++) {
    const { node, hostId } = await onboardedLabNode(db, `${name}-${stage}`);
    started.push(node);
    nodes.push({ node, targetId: await protectHost(db, hostId, { feeds: [upsId], stage }) });
  }
  await setModeConfirmingAll(db, "armed");
  // The monitor reads the UPS, and holds the armed plan with these targets in memory.
  await waitFor("the UPS read on mains", async () => {
    const [row] = await db.select().from(upsMonitorState).where(eq(upsMonitorState.upsId, upsId));
    return row?.lastReading?.onBattery === false;
  });
  const armedAt = new Date();
  await waitFor(
    "the armed plan held in memory",
    async () => {
      const plan = monitor.standbyPlan();
      return plan?.mode === "armed" && plan.loadedAt > armedAt;
    },
    30_000,
    50,
  );
  return { ups, upsId, nodes };
}

const shutdownsAt = (node: LabNode) =>
  node.api.requests.filter((r) => r.method === "POST" && r.path.endsWith("/status"));

describe("a shutdown without the database", () => {
  it("PostgreSQL killed and kept down before the flip, armed: every target is called and seen down; recorded exactly once when it is back", async () => {
    const { ups, upsId, nodes } = await fleet("nodb", 2);
    await postgres.stop("kill");
    try {
      ups.control.jumpToLowBattery();
      await waitUntil(() => nodes.every(({ node }) => node.power.state === "down"), {
        timeoutMs: 60_000,
        what: "every target down while the database is away",
      });
      // In order: stage 0 was called before stage 1.
      expect(shutdownsAt(nodes[0]!.node)[0]!.at.getTime()).toBeLessThan(
        shutdownsAt(nodes[1]!.node)[0]!.at.getTime(),
      );
    } finally {
      await postgres.start();
    }
    const run = await waitFor(
      "the run recorded",
      async () => {
        const list = await db.select().from(runs).where(eq(runs.pipeline, POWER_SHUTDOWN));
        return list.length > 0 && list;
      },
      30_000,
    );
    expect(run).toHaveLength(1);
    expect(run[0]).toMatchObject({ status: "succeeded" });
    expect(run[0]!.context.offline).toMatchObject({
      why: expect.stringMatching(/the database is unreachable/),
    });
    const calls = await db
      .select()
      .from(powerShutdownCalls)
      .where(eq(powerShutdownCalls.runId, run[0]!.id))
      .orderBy(asc(powerShutdownCalls.startedAt));
    expect(calls.map((c) => c.targetId)).toEqual(nodes.map((n) => n.targetId));
    expect(calls.every((c) => c.state === "sent" && c.seenDownAt !== null)).toBe(true);
    const kinds = (
      await db.select().from(powerEvents).where(eq(powerEvents.runId, run[0]!.id))
    ).map((e) => e.kind);
    expect(kinds.filter((k) => k === "shutdown.offline")).toHaveLength(1);
    expect(kinds.filter((k) => k === "shutdown.sent")).toHaveLength(2);
    expect(kinds.filter((k) => k === "target.down")).toHaveLength(2);

    // Exactly once: the monitor, writing again, starts no run of its own for the outage, and
    // nothing more reaches the nodes.
    await readings(upsId, 4);
    expect(await db.select().from(runs).where(eq(runs.pipeline, POWER_SHUTDOWN))).toHaveLength(1);
    for (const { node } of nodes) expect(shutdownsAt(node)).toHaveLength(1);
    expect(lines.filter((l) => l.includes("is recorded as power-shutdown run"))).toHaveLength(1);
    ups.control.restore();
  }, 180_000);

  it("a settings row that fails to parse when the trigger fires: a critical event, and the shutdown goes out from the plan in memory", async () => {
    const { ups, upsId, nodes } = await fleet("badrow", 1);
    // What an upgrade gone wrong or a hand edit can leave: the monitor's transaction throws.
    await db.execute(
      sql`update ${powerSettings} set shutdown = jsonb_set(shutdown, '{callTimeoutSeconds}', '0')`,
    );
    try {
      ups.control.jumpToLowBattery();
      await waitUntil(() => nodes[0]!.node.power.state === "down", {
        timeoutMs: 60_000,
        what: "the target down",
      });
      const failed = await waitFor("the critical event", async () => {
        const list = await db
          .select()
          .from(powerEvents)
          .where(and(eq(powerEvents.upsId, upsId), eq(powerEvents.kind, "monitor.failed")));
        return list.length > 0 && list;
      });
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ severity: "critical" });
      expect(failed[0]!.message).toMatch(/the trigger path failed/);
    } finally {
      await db.execute(
        sql`update ${powerSettings} set shutdown = jsonb_set(shutdown, '{callTimeoutSeconds}', '5')`,
      );
      ups.control.restore();
    }
  }, 180_000);
});

/** Waits until the monitor has written this many more readings of the UPS. */
async function readings(upsId: string, count: number) {
  const at = async () =>
    (await db.select().from(upsMonitorState).where(eq(upsMonitorState.upsId, upsId)))[0]!.updatedAt;
  let last = await at();
  let seen = 0;
  await waitFor(
    `${count} more readings`,
    async () => {
      const now = await at();
      if (now.getTime() !== last.getTime()) {
        seen++;
        last = now;
      }
      return seen >= count;
    },
    30_000,
    100,
  );
}
