import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq, inArray } from "drizzle-orm";
import { powerBackGuests, powerEvents, powerTargets, runs } from "@/lib/db/schema";
import { setPowerController } from "@/lib/power-controllers/store";
import { watchPowerBack } from "@/lib/power/monitor/power-back-watch";
import { watchShedding } from "@/lib/power/monitor/shed-watch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { outageToBringBack } from "@/lib/power/power-back-pipeline/start-power-back";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { actionsOfRun, type PowerRunAction } from "@/lib/power/records/run-actions";
import { POWER_SHED, POWER_SHED_BACK } from "@/lib/power/shed-pipeline/pipeline";
import { startShedRun } from "@/lib/power/shed-pipeline/start-shed";
import { shedPageView } from "@/lib/power/queries/shed-view";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { startLabCluster, type LabCluster } from "@/lab";
import {
  clusterNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import type { LabGuestSpec } from "@/lab/pve/cluster/model";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, persistOnBattery, persistOnMains, shutdownInput } from "@/test/fixtures/power";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";

/**
 * Early load shedding (issue 30, item 7) through the real worker against lab clusters over real
 * HTTPS: the monitor's own decision (watchShedding, its clock injected) on the UPS state a
 * monitor persists, the power-shed and power-shed-back runs on the worker, the lab's guests.
 *
 * Guests: 111 tagged `web;Shed` (order 2), 112 listed in the settings (order 1), 101 tagged but
 * HA-managed (never shed), 102 untagged, 121 tagged but stopped, 122 tagged `shed-not` (another
 * tag).
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const labs: LabCluster[] = [];
const bmcs: LabPowerControllers[] = [];

function guests(): LabGuestSpec[] {
  const all: LabGuestSpec[] = [
    { vmid: 101, type: "qemu", node: "pve1", tags: "shed", ha: true },
    { vmid: 102, type: "lxc", node: "pve1" },
    { vmid: 111, type: "qemu", node: "pve2", tags: "web;Shed", startup: "order=2" },
    { vmid: 112, type: "qemu", node: "pve2", startup: "order=1" },
    { vmid: 121, type: "qemu", node: "pve3", tags: "shed", status: "stopped" },
    { vmid: 122, type: "lxc", node: "pve3", tags: "shed-not" },
  ];
  return all;
}

let counter = 0;

type Setup = { lab: LabCluster; upsId: string; targets: Record<string, string> };

async function shedLab(options: { bmc?: boolean } = {}): Promise<Setup> {
  const { db } = database;
  const lab = await startLabCluster({
    nodes: 3,
    name: `shed-${++counter}`,
    guests: guests(),
    timing: {
      guestShutdownMs: 100,
      haDisarmMs: 100,
      haRecoveryMs: 100,
      nodeShutdownDelayMs: 100,
      guestStartMs: 100,
    },
    apiAuthFailureDelayMs: 50,
  });
  labs.push(lab);
  const { upsId, targets } = await protectLabCluster(db, lab);
  if (options.bmc) {
    const bmc = await startLabPowerControllers({
      nodes: lab.nodes.map((n) => clusterNodePower(lab, n.name)),
    });
    bmcs.push(bmc);
    const rows = await db
      .select({ id: powerTargets.id, hostId: powerTargets.hostId })
      .from(powerTargets)
      .where(inArray(powerTargets.id, Object.values(targets)));
    for (const [node, targetId] of Object.entries(targets)) {
      const redfish = bmc.node(node).redfish;
      await setPowerController(db, {
        hostId: rows.find((r) => r.id === targetId)!.hostId!,
        actor: "test",
        controller: {
          kind: "redfish",
          address: redfish.address,
          port: redfish.port,
          username: bmc.username,
          password: bmc.password,
          systemId: redfish.systemId,
        },
      });
    }
  }
  return { lab, upsId, targets };
}

async function setMode(mode: "armed" | "dry-run") {
  const { db } = database;
  const all = await db.select({ id: powerTargets.id }).from(powerTargets);
  await setPowerMode(db, { mode, confirmedTargetIds: all.map((t) => t.id) }, ADMIN);
}

async function runsOf(pipeline: string, after: Date) {
  const rows = await database.db
    .select({ id: runs.id, createdAt: runs.createdAt })
    .from(runs)
    .where(eq(runs.pipeline, pipeline))
    .orderBy(asc(runs.createdAt), asc(runs.id));
  return rows.filter((r) => r.createdAt >= after).map((r) => r.id);
}

async function eventsOf(runId: string) {
  return database.db
    .select({ kind: powerEvents.kind, message: powerEvents.message })
    .from(powerEvents)
    .where(eq(powerEvents.runId, runId))
    .orderBy(asc(powerEvents.id));
}

const labels = (actions: PowerRunAction[], pattern: RegExp) =>
  actions
    .filter((a) => pattern.test(a.label))
    .map((a) => [a.label, a.outcome])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));

const running = (lab: LabCluster) =>
  [...lab.model.guests.values()]
    .filter((g) => g.status === "running")
    .map((g) => g.vmid)
    .sort((a, b) => a - b);

const log: string[] = [];
const watch = (at = new Date()) => watchShedding(database.db, at, (line) => log.push(line));

beforeAll(async () => {
  worker = await startClusterTestWorker(database, null);
  await updatePowerSettings(
    database.db,
    {
      shed: { enabled: true, afterMinutes: 2, tag: "shed", guests: [{ node: "pve2", vmid: 112 }] },
    },
    ADMIN,
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  for (const bmc of bmcs) await bmc.stop();
  for (const lab of labs) await lab.stop();
});

describe("early load shedding", () => {
  it("armed: a blip shorter than the threshold sheds nothing; past it exactly the tagged and listed guests go down once per outage, each read back stopped — and mains back before the main trigger starts exactly them again", async () => {
    const { db } = database;
    const { lab, upsId } = await shedLab();
    await setMode("armed");
    const t0 = new Date();
    const since = new Date();

    // One ms short of 2 minutes on battery (the monitor's monotonic clock): nothing.
    await persistOnBattery(db, upsId, { onBatteryMs: 119_999, since });
    await watch();
    expect(await runsOf(POWER_SHED, t0)).toEqual([]);

    await persistOnBattery(db, upsId, { onBatteryMs: 120_000, since });
    await watch();
    await watch();
    const shed = await runsOf(POWER_SHED, t0);
    expect(shed).toHaveLength(1);
    const run = await settled(db, shed[0]!, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");

    // Exactly 111 (tag, any case) and 112 (the list) stopped; 101 (HA) said why; the rest ran on.
    expect(running(lab)).toEqual([101, 102, 122]);
    const actions = await actionsOfRun(db, shed[0]!);
    expect(labels(actions, /^shed /)).toEqual([
      ["shed qemu 101", "failed"],
      ["shed qemu 111", "ok"],
      ["shed qemu 112", "ok"],
    ]);
    expect(actions.find((a) => a.label === "shed qemu 101")!.detail).toMatch(/HA manages it/);
    const recorded = await db
      .select()
      .from(powerBackGuests)
      .where(eq(powerBackGuests.runId, shed[0]!))
      .orderBy(asc(powerBackGuests.vmid));
    expect(recorded.map((g) => [g.vmid, g.node, g.startupOrder, g.mode])).toEqual([
      [111, "pve2", 2, "armed"],
      [112, "pve2", 1, "armed"],
    ]);
    expect((await eventsOf(shed[0]!)).map((e) => e.kind)).toEqual([
      "power.shed.started",
      "power.shed.done",
    ]);

    // The /power card, from what the run recorded.
    const view = (await shedPageView(db)).latest!;
    expect(view.runId).toBe(shed[0]);
    expect(view.guests.map((g) => [g.vmid, g.state])).toEqual([
      [101, "left-running"],
      [111, "shed"],
      [112, "shed"],
    ]);
    expect(view.verdict.tone).toBe("ok");
    expect(view.verdict.text).toMatch(
      /^shed 111, 112 after 2 min on battery \(each read back stopped\); left running: 101 \(HA manages it/,
    );

    // The same outage, later: no second shed.
    await persistOnBattery(db, upsId, { onBatteryMs: 300_000, since });
    await watch();
    expect(await runsOf(POWER_SHED, t0)).toHaveLength(1);

    // Mains back (held for the trigger's confirmation) before the main trigger: exactly the
    // shed guests start again, in their startup order; the others are untouched.
    await persistOnMains(db, upsId, {
      mainsMs: 5000,
      chargePercent: 80,
      runtimeSeconds: 1200,
      rawStatus: "OL CHRG",
    });
    await watch();
    await watch();
    const back = await runsOf(POWER_SHED_BACK, t0);
    expect(back).toHaveLength(1);
    const backRun = await settled(db, back[0]!, 120_000);
    expect(backRun.status, backRun.failureReason ?? "").toBe("succeeded");
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
    expect(lab.model.guestStarts.map((s) => s.vmid)).toEqual([112, 111]);
    expect(labels(await actionsOfRun(db, back[0]!), /^start /)).toEqual([
      ["start qemu 111", "ok"],
      ["start qemu 112", "ok"],
    ]);
    const backEvents = await eventsOf(back[0]!);
    expect(backEvents.map((e) => e.kind)).toEqual(["power.shed.restarted"]);
    expect(backEvents[0]!.message).toContain("2 of 2 shed guest(s) running again");
    expect((await shedPageView(db)).latest!.verdict.text).toContain(
      "mains back before the main trigger: 2 of 2 running again",
    );
    await watch();
    expect(await runsOf(POWER_SHED_BACK, t0)).toHaveLength(1);
  }, 240_000);

  it("dry-run: past the threshold the shed guests are recorded as would shut down and nothing is sent; mains back records would start", async () => {
    const { db } = database;
    const { lab, upsId } = await shedLab();
    await setMode("dry-run");
    const t0 = new Date();
    await persistOnBattery(db, upsId, { onBatteryMs: 125_000, since: new Date() });
    await watch();
    const shed = await runsOf(POWER_SHED, t0);
    expect(shed).toHaveLength(1);
    const run = await settled(db, shed[0]!, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
    const actions = await actionsOfRun(db, shed[0]!);
    expect(labels(actions, /^shed /)).toEqual([
      ["shed qemu 101", "failed"],
      ["shed qemu 111", "would-do"],
      ["shed qemu 112", "would-do"],
    ]);
    expect(actions.find((a) => a.label === "shed qemu 111")!.request).toMatch(
      /^POST https:\/\/.+\/nodes\/pve2\/qemu\/111\/status\/shutdown/,
    );
    const done = (await eventsOf(shed[0]!)).at(-1)!;
    expect(done.kind).toBe("power.shed.done");
    expect(done.message).toContain("(dry-run): would shed 111, 112; nothing was sent");
    expect((await shedPageView(db)).latest!.verdict).toEqual({
      tone: "dry-run",
      text: expect.stringMatching(
        /^dry-run: would shed 111, 112 after 2 min on battery; nothing sent/,
      ),
    });

    await persistOnMains(db, upsId, {
      mainsMs: 5000,
      chargePercent: 80,
      runtimeSeconds: 1200,
      rawStatus: "OL",
    });
    await watch();
    const back = await runsOf(POWER_SHED_BACK, t0);
    expect(back).toHaveLength(1);
    expect((await settled(db, back[0]!, 120_000)).status).toBe("succeeded");
    expect(labels(await actionsOfRun(db, back[0]!), /^start /)).toEqual([
      ["start qemu 111", "would-do"],
      ["start qemu 112", "would-do"],
    ]);
    expect(lab.model.guestStarts).toEqual([]);
  }, 240_000);

  it("main trigger after shedding: the shutdown proceeds, nothing is restarted early, and the way back later starts the shed guests with the rest", async () => {
    const { db } = database;
    const { lab, upsId, targets } = await shedLab({ bmc: true });
    await setMode("armed");
    await updatePowerSettings(
      db,
      { powerBack: { mainsStableMinutes: 1, minChargePercent: 50 } },
      ADMIN,
    );
    const t0 = new Date();
    const since = new Date();
    await persistOnBattery(db, upsId, { onBatteryMs: 120_000, since });
    await watch();
    const shed = await runsOf(POWER_SHED, t0);
    expect(shed).toHaveLength(1);
    expect((await settled(db, shed[0]!, 120_000)).status).toBe("succeeded");
    expect(running(lab)).toEqual([101, 102, 122]);

    // The main trigger latches later in the same outage: the shutdown run takes every target.
    await persistOnBattery(db, upsId, { onBatteryMs: 150_000, since, latched: true });
    const shutdownRunId = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(upsId, Object.values(targets))),
    );
    const shutdown = await settled(db, shutdownRunId, 180_000);
    expect(shutdown.status, shutdown.failureReason ?? "").toBe("succeeded");
    for (const node of lab.model.nodes) expect(node.online).toBe(false);
    await watch();
    expect(await runsOf(POWER_SHED, t0)).toHaveLength(1);

    // Mains back: the main shutdown took this outage — no early restart; the way back has the
    // shed run's guests and starts them with the others.
    await persistOnMains(db, upsId, {
      mainsMs: 60_000,
      chargePercent: 80,
      runtimeSeconds: 100_000,
      rawStatus: "OL CHRG",
    });
    await watch();
    expect(await runsOf(POWER_SHED_BACK, t0)).toEqual([]);
    const outage = (await outageToBringBack(db, new Date()))!;
    expect(outage.shedRunIds).toEqual(shed);
    await watchPowerBack(db, new Date(), () => {});
    const ways = await runsOf(POWER_BACK, t0);
    expect(ways).toHaveLength(1);
    const way = await settled(db, ways[0]!, 240_000);
    expect(way.status, way.failureReason ?? "").toBe("succeeded");
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
    const started = labels(await actionsOfRun(db, ways[0]!), /^start /);
    expect(started).toEqual([
      ["start lxc 102", "ok"],
      ["start lxc 122", "ok"],
      ["start qemu 101", "ok"],
      ["start qemu 111", "ok"],
      ["start qemu 112", "ok"],
    ]);
    // 112 went down by the shed: only the shed run recorded it.
    const by112 = await db
      .select({ runId: powerBackGuests.runId })
      .from(powerBackGuests)
      .where(
        and(
          eq(powerBackGuests.vmid, 112),
          inArray(powerBackGuests.runId, [...shed, shutdownRunId]),
        ),
      )
      .orderBy(asc(powerBackGuests.id));
    expect(by112.map((r) => r.runId)).toEqual(shed);
  }, 480_000);

  it("the main trigger latched while a shed is due: the shed sends nothing, its guests keep running", async () => {
    const { db } = database;
    const { lab, upsId, targets } = await shedLab();
    await setMode("armed");
    const since = new Date();
    await persistOnBattery(db, upsId, { onBatteryMs: 200_000, since, latched: true });
    // The monitor's own decision never starts it (row 2); a shed run already under way when
    // the trigger latches meets the latch at its next look: started here the way the monitor
    // starts one, with the latch already set, so the look is the first it takes.
    const t0 = new Date();
    await watch();
    expect(await runsOf(POWER_SHED, t0)).toEqual([]);
    const started = await db.transaction((tx) =>
      startShedRun(
        tx,
        Object.values(targets).map((targetId) => ({
          targetId,
          outages: [`${upsId}@${since.toISOString()}`],
          why: "on battery for 2 min",
        })),
        new Date(),
      ),
    );
    const run = await settled(db, started!.runId, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(run.context.outcome).toBe("main-trigger");
    expect(labels(await actionsOfRun(db, started!.runId), /./)).toEqual([]);
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
    const done = (await eventsOf(started!.runId)).at(-1)!;
    expect(done.kind).toBe("power.shed.done");
    expect(done.message).toContain("the main trigger fired: the shutdown run took over");
  }, 120_000);
});
