import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerEvents, runs, upsMonitorState, upsReadings } from "@/lib/db/schema";
import { listPowerTargets } from "@/lib/power/operations/power-targets";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { registerTestDatabase } from "@/test/db";
import {
  addUps,
  ADMIN,
  nutSourceOf,
  snmpSourceOf,
  onboardedLabNode,
  powerTestPipelines,
  protectHost,
} from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * The monitor in this process against the lab UPS's NUT face (a real protocol peer) and lab
 * nodes: readings become state, history and events; a trigger becomes a power-shutdown run.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let monitor: PowerMonitor;
const ups: { one?: LabUps; two?: LabUps } = {};
const upsIds: { one?: string; two?: string } = {};
const nodes: { single?: LabNode; redundant?: LabNode } = {};
const lines: string[] = [];

beforeAll(async () => {
  const { db, url } = database;
  worker = await startWorker({
    connectionString: url,
    pipelines: powerTestPipelines,
    concurrency: 2,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
  });
  // rack-a over SNMP (its UPS-MIB carries the UPS's own on-battery counter), rack-b over NUT.
  ups.one = await startLabUps({ name: "rack-a", nut: false, snmp: { v3: false } });
  ups.two = await startLabUps({ name: "rack-b", snmp: false });
  upsIds.one = await addUps(db, "rack-a", snmpSourceOf(ups.one));
  upsIds.two = await addUps(db, "rack-b", nutSourceOf(ups.two));
  const single = await onboardedLabNode(db, "pve-single");
  const redundant = await onboardedLabNode(db, "pve-redundant");
  nodes.single = single.node;
  nodes.redundant = redundant.node;
  await protectHost(db, single.hostId, { feeds: [upsIds.one], feedPolicy: "any" });
  // Two power supplies, one on each UPS: down only when both fail.
  await protectHost(db, redundant.hostId, {
    feeds: [upsIds.one, upsIds.two],
    feedPolicy: "all",
    stage: 1,
  });
  await updatePowerSettings(
    db,
    {
      triggers: { onBatteryForSeconds: 600, latchReleaseAfterStableMainsSeconds: 1 },
      // The product's call timeout: a 3-s one is exceeded on a loaded machine, and the retry
      // that rightly follows is a second POST these tests do not expect.
      shutdown: { callTimeoutSeconds: 10, targetDownSeconds: 20 },
    },
    ADMIN,
  );
  monitor = await startPowerMonitor({
    connectionString: url,
    supervisorIntervalMs: 500,
    log: (line) => lines.push(line),
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await Promise.all([
    ups.one?.stop(),
    ups.two?.stop(),
    nodes.single?.stop(),
    nodes.redundant?.stop(),
  ]);
});

const stateOf = async (upsId: string) => {
  const [row] = await database.db
    .select()
    .from(upsMonitorState)
    .where(eq(upsMonitorState.upsId, upsId));
  return row;
};
const eventsOf = (upsId: string, kind: string) =>
  database.db
    .select()
    .from(powerEvents)
    .where(and(eq(powerEvents.upsId, upsId), eq(powerEvents.kind, kind)))
    .orderBy(asc(powerEvents.id));
const powerRuns = () =>
  database.db
    .select()
    .from(runs)
    .where(eq(runs.pipeline, POWER_SHUTDOWN))
    .orderBy(asc(runs.createdAt));
const posts = (node: LabNode) => node.api.requests.filter((r) => r.method === "POST");

describe("the power monitor", () => {
  it("takes the lease of every UPS and records readings on mains", async () => {
    await waitFor("both UPSes watched", async () => monitor.watching().length === 2);
    const state = await waitFor("a reading of rack-a", async () => {
      const row = await stateOf(upsIds.one!);
      return row?.lastReading && row;
    });
    expect(state.leaseOwner).toBe(monitor.ownerId);
    expect(state.reachable).toBe(true);
    expect(state.lastReading).toMatchObject({
      onBattery: false,
    });
    expect(state.mainsSince).not.toBeNull();
  });

  it("PVE-UPS #25: a UPS whose own counter says 900 s at the start of an outage shuts nothing down", async () => {
    ups.one!.control.setStaleCounterOnNextOutage(900);
    const pulled = Date.now();
    ups.one!.control.pullPlug();
    const onBattery = await waitFor("rack-a on battery", async () => {
      const row = await stateOf(upsIds.one!);
      return row?.onBatterySince && row;
    });
    // The UPS did report its stale counter …
    await waitFor("the stale counter in a reading", async () => {
      const row = await stateOf(upsIds.one!);
      return (row?.lastReading?.reportedSecondsOnBattery ?? 0) >= 900;
    });
    // … the console's clock started at the transition it saw.
    expect(onBattery.onBatterySince!.getTime()).toBeGreaterThanOrEqual(pulled - 100);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await eventsOf(upsIds.one!, "trigger.fired")).toEqual([]);
    expect(await powerRuns()).toEqual([]);
    expect((await eventsOf(upsIds.one!, "ups.on_battery")).length).toBe(1);
    ups.one!.control.setStaleCounterOnNextOutage(null);
  });

  it("dry-run: low battery fires, a run shuts down (would) the any-policy host; the all-policy host stays, nothing is sent", async () => {
    ups.one!.control.jumpToLowBattery();
    const fired = await waitFor(
      "the trigger",
      async () => (await eventsOf(upsIds.one!, "trigger.fired"))[0],
    );
    expect(fired.data).toMatchObject({ trigger: "low_battery" });
    const [run] = await waitFor("a power run", async () => {
      const list = await powerRuns();
      return list.length > 0 && list;
    });
    const done = await settled(database.db, run!.id);
    expect(done.status).toBe("succeeded");
    const wouldSend = await database.db
      .select()
      .from(powerEvents)
      .where(and(eq(powerEvents.runId, run!.id), eq(powerEvents.kind, "shutdown.would_send")));
    expect(wouldSend.map((e) => e.message)).toEqual([
      expect.stringContaining(`/api2/json/nodes/pve-single/status command=shutdown`),
    ]);
    expect(posts(nodes.single!)).toEqual([]);
    expect(posts(nodes.redundant!)).toEqual([]);
    // Every reading on battery is in the history, with its values.
    const history = await database.db
      .select()
      .from(upsReadings)
      .where(and(eq(upsReadings.upsId, upsIds.one!), eq(upsReadings.onBattery, true)));
    expect(history.length).toBeGreaterThanOrEqual(3);
    expect(history.some((h) => h.lowBattery && h.chargePercent !== null)).toBe(true);
  });

  it("keeps one run per outage while the latch holds, and a released latch lets the next outage fire again", async () => {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await powerRuns()).toHaveLength(1);
    ups.one!.control.restore();
    await waitFor("mains back", async () => (await eventsOf(upsIds.one!, "ups.mains_back"))[0]);
    await waitFor(
      "the latch released after stable mains",
      async () => (await eventsOf(upsIds.one!, "latch.released"))[0],
    );
    expect((await stateOf(upsIds.one!))?.latchedAt).toBeNull();
  });

  it("armed: only the any-policy host gets its call while the redundant one's second feed is on mains; then both feeds fail and it goes too", async () => {
    const { db } = database;
    const ids = (await listPowerTargets(db)).map((t) => t.id);
    await setPowerMode(db, { mode: "armed", confirmedTargetIds: ids }, ADMIN);
    const before = (await powerRuns()).length;
    ups.one!.control.jumpToLowBattery();
    await waitFor("rack-a's run", async () => (await powerRuns()).length === before + 1);
    await waitUntil(() => posts(nodes.single!).length === 1, { timeoutMs: 15_000 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(posts(nodes.redundant!)).toEqual([]);
    expect(nodes.redundant!.power.state).toBe("up");

    ups.two!.control.jumpToLowBattery();
    await waitUntil(() => posts(nodes.redundant!).length === 1, {
      timeoutMs: 15_000,
      what: "the redundant host's call",
    });
    const all = await powerRuns();
    expect(all).toHaveLength(before + 2);
    for (const run of all.slice(before))
      expect((await settled(db, run.id)).status).toBe("succeeded");
    expect(posts(nodes.single!)).toHaveLength(1);
    expect(posts(nodes.redundant!)).toHaveLength(1);
    await setPowerMode(db, { mode: "dry-run" }, ADMIN);
    ups.one!.control.restore();
    ups.two!.control.restore();
    await Promise.all([nodes.single!.power.powerOn(), nodes.redundant!.power.powerOn()]);
  });

  it("a UPS that stops answering raises an alarm and shuts nothing down", async () => {
    const { db } = database;
    await waitFor(
      "rack-b back on mains",
      async () => (await stateOf(upsIds.two!))?.lastReading?.onBattery === false,
    );
    await releaseLatch(db, { upsId: upsIds.two! }, ADMIN).catch(() => {});
    const runsBefore = (await powerRuns()).length;
    await ups.two!.control.setReachability("refused");
    const alarm = await waitFor(
      "the alarm",
      async () => (await eventsOf(upsIds.two!, "ups.unreachable"))[0],
    );
    expect(alarm.severity).toBe("warning");
    expect(alarm.message).toMatch(/no reliable reading/);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await stateOf(upsIds.two!))?.reachable).toBe(false);
    expect(await powerRuns()).toHaveLength(runsBefore);
    await ups.two!.control.setReachability("reachable");
    await waitFor("answering again", async () => (await eventsOf(upsIds.two!, "ups.reachable"))[0]);
  });
});
