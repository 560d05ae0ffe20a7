import net from "node:net";
import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerEvents, runs, upsDevices, upsMonitorState } from "@/lib/db/schema";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import type { UpsSource } from "@/lib/power/ups/reading";
import { createUpsSource } from "@/lib/power/ups/source";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { registerTestDatabase } from "@/test/db";
import {
  addUps,
  ADMIN,
  nutSourceOf,
  onboardedLabNode,
  protectHost,
  setModeConfirmingAll,
} from "@/test/fixtures/power";
import { startPowerTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import type { WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * The day of faults, through the real monitor (in this process, against lab UPSes over NUT), the
 * real worker and lab nodes: what must go down goes down, and what must stay up stays up. Each
 * test has its own UPS and nodes; calls are counted where the lab received them.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let monitor: PowerMonitor;
const started: Array<{ stop(): Promise<void> }> = [];
/** Per NUT port: how far its readings' wall clock is stepped (an NTP step as the console sees it). */
const wallStep = new Map<string, number>();

beforeAll(async () => {
  const { db, url } = database;
  worker = await startPowerTestWorker({ url });
  await updatePowerSettings(
    db,
    {
      // Only the rows each test means: low battery (two readings), no time or charge rows.
      triggers: {
        runtimeBelowSeconds: null,
        chargeBelowPercent: null,
        onBatteryForSeconds: null,
        latchReleaseAfterStableMainsSeconds: 600,
      },
      shutdown: { callTimeoutSeconds: 60, targetDownSeconds: 30 },
    },
    ADMIN,
  );
  monitor = await startPowerMonitor({
    connectionString: url,
    supervisorIntervalMs: 300,
    log: () => {},
    openSource: (config) => {
      const source = createUpsSource(config);
      const port = String(config.port);
      return steppedWallClock(source, () => wallStep.get(port) ?? 0);
    },
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await Promise.all(started.map((s) => s.stop()));
});

/** The source's readings with their wall clock stepped; the monitor's monotonic clock is not. */
function steppedWallClock(source: UpsSource, stepMs: () => number): UpsSource {
  return {
    read: async () => {
      const reading = await source.read();
      return { ...reading, at: new Date(reading.at.getTime() + stepMs()) };
    },
    close: () => source.close(),
  };
}

async function labUps(name: string): Promise<{ ups: LabUps; upsId: string }> {
  const ups = await startLabUps({ name, snmp: false });
  started.push(ups);
  return { ups, upsId: await addUps(database.db, name, nutSourceOf(ups)) };
}

async function node(name: string, protection: Parameters<typeof protectHost>[2]) {
  const { node, hostId } = await onboardedLabNode(database.db, name);
  started.push(node);
  return { node, targetId: await protectHost(database.db, hostId, protection) };
}

async function setMode(mode: "armed" | "dry-run") {
  await setModeConfirmingAll(database.db, mode);
}

const stateOf = async (upsId: string) => {
  const [row] = await database.db
    .select()
    .from(upsMonitorState)
    .where(eq(upsMonitorState.upsId, upsId));
  return row;
};
const powerRuns = () =>
  database.db
    .select()
    .from(runs)
    .where(eq(runs.pipeline, POWER_SHUTDOWN))
    .orderBy(asc(runs.createdAt));
const runsOf = async (targetId: string) =>
  (await powerRuns()).filter((r) =>
    (r.context.input as { targets: Array<{ targetId: string }> }).targets.some(
      (t) => t.targetId === targetId,
    ),
  );
const eventsOf = (upsId: string, kind: string) =>
  database.db
    .select()
    .from(powerEvents)
    .where(and(eq(powerEvents.upsId, upsId), eq(powerEvents.kind, kind)))
    .orderBy(asc(powerEvents.id));
const shutdowns = (labNode: LabNode) =>
  labNode.api.requests.filter((r) => r.method === "POST" && r.path.endsWith("/status"));

/** Waits until the monitor has recorded this many more readings of the UPS (any kind). */
async function readingsLater(upsId: string, count: number) {
  // A UPS just added has no state row until the monitor's first reading of it: that reading
  // counts as the first of the `count`.
  let seen = 0;
  let last = (await stateOf(upsId))?.updatedAt ?? null;
  await waitFor(
    `${count} more readings`,
    async () => {
      const now = (await stateOf(upsId))?.updatedAt ?? null;
      if (now !== null && now.getTime() !== last?.getTime()) {
        seen++;
        last = now;
      }
      return seen >= count;
    },
    30_000,
    100,
  );
}

describe("the day of faults", () => {
  it("mains back and held between stages: the stages not begun are spared and named; what began goes on", async () => {
    const { db } = database;
    const { ups, upsId } = await labUps("faults-a");
    const first = await node("pve-a0", { feeds: [upsId], stage: 0 });
    const second = await node("pve-a1", { feeds: [upsId], stage: 1 });
    const third = await node("pve-a2", { feeds: [upsId], stage: 2 });
    await setMode("armed");
    try {
      // The first stage's call stays in flight until the test lets it go.
      await first.node.switches.apply({ "api.statusPostHeld": true });
      ups.control.jumpToLowBattery();
      await waitUntil(() => shutdowns(first.node).length > 0, {
        timeoutMs: 30_000,
        what: "the first stage's call",
      });
      ups.control.restore();
      // Mains back and held for the confirmation (3 s by the monitor's monotonic clock).
      await waitFor(
        "mains held for the confirmation",
        async () => {
          const state = await stateOf(upsId);
          return state?.lastReading?.onBattery === false && (state.durations.mainsMs ?? 0) >= 3000;
        },
        30_000,
      );
      await first.node.switches.apply({ "api.statusPostHeld": false });
      const [run] = await runsOf(first.targetId);
      const done = await settled(db, run!.id, 60_000);
      expect(done.status, done.failureReason ?? "").toBe("succeeded");
      expect(first.node.power.state).toBe("down");
      expect(shutdowns(second.node)).toEqual([]);
      expect(shutdowns(third.node)).toEqual([]);
      const spared = await eventsOf(upsId, "shutdown.spared");
      expect(spared).toHaveLength(1);
      expect(spared[0]!.message).toMatch(/spared — not shut down; what was already sent goes on/);
      expect((spared[0]!.data as { targets: string[] }).targets).toEqual([
        second.targetId,
        third.targetId,
      ]);
    } finally {
      await first.node.switches.apply({ "api.statusPostHeld": false });
      await setMode("dry-run");
    }
  }, 120_000);

  it("after a run that sent nothing, a 1-s blip of battery inside the latch's window shuts nothing down", async () => {
    const { db } = database;
    const { ups, upsId } = await labUps("faults-b");
    const host = await node("pve-b0", { feeds: [upsId] });
    // The outage is rehearsed in dry-run: its run sends nothing (as a cancelled one).
    ups.control.jumpToLowBattery();
    const [rehearsal] = await waitFor("the outage's run", async () => {
      const list = await runsOf(host.targetId);
      return list.length > 0 && list;
    });
    await settled(db, rehearsal!.id, 60_000);
    ups.control.restore();
    await waitFor("mains back, the latch dormant", async () => {
      const state = await stateOf(upsId);
      return state?.lastReading?.onBattery === false && state.latchDormant && state;
    });
    await setMode("armed");
    try {
      // One reading of OB LB, then mains again.
      ups.control.jumpToLowBattery();
      await waitFor(
        "the blip's reading",
        async () => (await stateOf(upsId))?.lastReading?.onBattery === true,
        30_000,
        20,
      );
      ups.control.restore();
      await waitFor("mains again", async () => {
        const state = await stateOf(upsId);
        return state?.lastReading?.onBattery === false;
      });
      await readingsLater(upsId, 3);
      expect(await runsOf(host.targetId)).toHaveLength(1);
      expect(shutdowns(host.node)).toEqual([]);
      expect(await eventsOf(upsId, "trigger.fired")).toHaveLength(1);
      expect((await stateOf(upsId))!.latchDormant).toBe(true);
    } finally {
      await setMode("dry-run");
    }
  }, 120_000);

  it("'all' feed policy: a second UPS nobody can read does not keep a redundant host up when the first runs dry", async () => {
    const { ups, upsId } = await labUps("faults-c");
    const closed = await closedPort();
    const deadId = await addUps(database.db, "faults-c-dead", {
      type: "nut",
      host: "127.0.0.1",
      port: closed,
      upsName: "gone",
    });
    const host = await node("pve-c0", { feeds: [upsId, deadId], feedPolicy: "all" });
    await waitFor(
      "the second UPS's alarm",
      async () => (await stateOf(deadId))?.reachable === false,
    );
    await setMode("armed");
    try {
      ups.control.jumpToLowBattery();
      await waitUntil(() => host.node.power.state === "down", {
        timeoutMs: 60_000,
        what: "the redundant host down",
      });
      expect(shutdowns(host.node).filter((r) => r.status === 200)).toHaveLength(1);
    } finally {
      await setMode("dry-run");
    }
  }, 120_000);

  it("FSD with OL (upsmon -c fsd during NUT maintenance) shuts nothing down", async () => {
    const { ups, upsId } = await labUps("faults-d");
    const host = await node("pve-d0", { feeds: [upsId] });
    await setMode("armed");
    try {
      ups.control.set({ forcedShutdown: true });
      await waitFor(
        "FSD read",
        async () => (await stateOf(upsId))?.lastReading?.forcedShutdown === true,
      );
      await readingsLater(upsId, 4);
      expect(await runsOf(host.targetId)).toEqual([]);
      expect(shutdowns(host.node)).toEqual([]);
      expect(await eventsOf(upsId, "trigger.fired")).toEqual([]);
    } finally {
      ups.control.set({ forcedShutdown: false });
      await setMode("dry-run");
    }
  }, 120_000);

  it("the wall clock stepped ±10 min on battery: the time-on-battery trigger fires by the monotonic clock, neither at the step nor 10 min late", async () => {
    const { db } = database;
    const { ups, upsId } = await labUps("faults-e");
    await node("pve-e0", { feeds: [upsId] });
    await db
      .update(upsDevices)
      .set({
        triggerOverrides: { lowBattery: false, onBatteryForSeconds: 5, confirmSeconds: 0 },
        updatedAt: new Date(),
      })
      .where(eq(upsDevices.id, upsId));
    await readingsLater(upsId, 2);

    // Forward: 10 min ahead right after the outage began.
    ups.control.pullPlug();
    await waitFor("on battery", async () => (await stateOf(upsId))?.lastReading?.onBattery);
    const port = String(ups.nut!.port);
    wallStep.set(port, 600_000);
    await readingsLater(upsId, 2);
    expect((await stateOf(upsId))!.latchedAt).toBeNull();
    const fired = await waitFor(
      "the trigger",
      async () => {
        const state = await stateOf(upsId);
        return state?.latchedAt && state;
      },
      30_000,
    );
    expect(fired.latchedTrigger).toBe("on_battery_for");
    expect(fired.durations.onBatteryMs!).toBeGreaterThanOrEqual(5000);
    // The wall clock says more than 10 min passed; the trigger did not believe it.
    expect(fired.latchedAt!.getTime() - fired.onBatterySince!.getTime()).toBeGreaterThan(600_000);

    // Back: a new outage, the wall clock stepped 10 min back right after it began.
    ups.control.restore();
    await waitFor("mains", async () => (await stateOf(upsId))?.lastReading?.onBattery === false);
    await releaseLatch(db, { upsId }, ADMIN);
    await waitFor("released", async () => (await stateOf(upsId))?.latchedAt === null);
    const since = new Date();
    ups.control.pullPlug();
    await waitFor("on battery again", async () => (await stateOf(upsId))?.lastReading?.onBattery);
    wallStep.set(port, -600_000);
    const again = await waitFor(
      "the trigger again",
      async () => {
        const fires = await database.db
          .select()
          .from(powerEvents)
          .where(and(eq(powerEvents.upsId, upsId), eq(powerEvents.kind, "trigger.fired")));
        const state = await stateOf(upsId);
        return fires.length === 2 && state?.latchedAt && state;
      },
      30_000,
    );
    expect(again.durations.onBatteryMs!).toBeGreaterThanOrEqual(5000);
    expect(again.latchedAt!.getTime()).toBeLessThan(since.getTime());
    ups.control.restore();
  }, 120_000);
});

function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}
