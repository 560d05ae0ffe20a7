import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerEvents, runs, upsMonitorState } from "@/lib/db/schema";
import { setPowerController } from "@/lib/power-controllers/store";
import { bringBackNow } from "@/lib/power/operations/bring-back-now";
import { powerOnProtectedHost } from "@/lib/power/operations/power-on-protected-host";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import type { LabNode } from "@/lab";
import { startLabPowerControllers } from "@/lab/power-controllers";
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
import { labRedfish } from "@/test/fixtures/lab-bmc";

/**
 * Issue 30, item 5, through the real monitor (in this process, against a lab UPS over NUT), the
 * real worker, a lab node and its lab BMC: after a way back, a loss of mains is a new outage, and
 * a host the way back powered on is shut down again. Its own database: a way back covers every
 * outage since the last one, so another test's open outage must not be part of it.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let monitor: PowerMonitor;
const started: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  const { db, url } = database;
  worker = await startPowerTestWorker({ url });
  await updatePowerSettings(
    db,
    {
      // Only the UPS's low battery (two readings) fires; the latch would sleep for 10 min.
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
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  for (const s of started.reverse()) await s.stop();
});

async function labUps(name: string): Promise<{ ups: LabUps; upsId: string }> {
  const ups = await startLabUps({ name, snmp: false });
  started.push(ups);
  return { ups, upsId: await addUps(database.db, name, nutSourceOf(ups)) };
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
const runsOf = async (targetId: string) =>
  (
    await database.db
      .select()
      .from(runs)
      .where(eq(runs.pipeline, POWER_SHUTDOWN))
      .orderBy(asc(runs.createdAt), asc(runs.id))
  ).filter((r) =>
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

/** A lab UPS over NUT and a lab node it feeds, onboarded and protected, with a lab Redfish BMC. */
async function protectedHostWithBmc(upsName: string, nodeName: string) {
  const { db } = database;
  const { ups, upsId } = await labUps(upsName);
  const { node: host, hostId } = await onboardedLabNode(db, nodeName);
  started.push(host);
  const targetId = await protectHost(db, hostId, { feeds: [upsId] });
  const bmc = await startLabPowerControllers({
    nodes: [
      {
        name: host.name,
        isOn: () => host.power.state === "up",
        powerOn: () => host.power.powerOn(),
        powerOff: async () => {},
      },
    ],
  });
  started.push(bmc);
  await setPowerController(db, { hostId, actor: "test", controller: labRedfish(bmc, host.name) });
  return { ups, upsId, host, hostId, targetId, bmc };
}

/** Mains back: the latch sleeps (dormant) — it still names the outage. */
async function latchAsleepOnMains(upsId: string) {
  await waitFor("the latch dormant on mains", async () => {
    const state = await stateOf(upsId);
    return state?.latchDormant === true && state.lastReading?.onBattery === false;
  });
}

/** Waits for the target's n-th shutdown run (1-based) and its end. */
async function nthRunSettled(targetId: string, n: number) {
  const list = await waitFor(`shutdown run ${n}`, async () => {
    const runs = await runsOf(targetId);
    return runs.length >= n && runs;
  });
  const run = list[n - 1]!;
  const done = await settled(database.db, run.id, 60_000);
  expect(done.status, done.failureReason ?? "").toBe("succeeded");
  return run;
}

const dueSince = (run: { context: Record<string, unknown> }) =>
  new Date((run.context.input as { targets: Array<{ dueSince: string }> }).targets[0]!.dueSince);

describe("the way back and the next outage", () => {
  it("the way back ends the outage: a host it powered on is shut down again when mains goes once more", async () => {
    const { db } = database;
    const { ups, upsId, host, targetId } = await protectedHostWithBmc("faults-w", "pve-w0");
    await setMode("armed");
    try {
      ups.control.jumpToLowBattery();
      const first = await nthRunSettled(targetId, 1);
      expect(host.power.state).toBe("down");

      // Mains back: the latch sleeps (dormant) — it still names the outage.
      ups.control.restore();
      await latchAsleepOnMains(upsId);
      const back = await settled(db, (await bringBackNow(db, {}, ADMIN)).runId, 60_000);
      expect(back.status, back.failureReason ?? "").toBe("succeeded");
      expect(host.power.state).toBe("up");
      const released = await eventsOf(upsId, "latch.released");
      expect(released.map((e) => [e.runId, e.message])).toEqual([
        [back.id, expect.stringMatching(/^faults-w: latch released by the way back/)],
      ]);
      expect((await stateOf(upsId))?.latchedAt).toBeNull();

      // Mains lost again: a new outage, and the host that came back is due again.
      ups.control.jumpToLowBattery();
      const second = await nthRunSettled(targetId, 2);
      expect(dueSince(second).getTime()).toBeGreaterThan(dueSince(first).getTime());
      expect(host.power.state).toBe("down");
      expect(shutdowns(host)).toHaveLength(2);
    } finally {
      ups.control.restore();
      await setMode("dry-run");
    }
  }, 180_000);
  // After the test above: its way back closed every outage before it, and this one brings none back.
  it("a host powered on by hand: refused while the trigger holds on battery; on mains it ends the outage, and the next one shuts it down again", async () => {
    const { db } = database;
    const { ups, upsId, host, hostId, targetId, bmc } = await protectedHostWithBmc(
      "faults-h",
      "pve-h0",
    );
    const chassis = bmc.node(host.name).chassis;
    await setMode("armed");
    try {
      ups.control.jumpToLowBattery();
      const first = await nthRunSettled(targetId, 1);
      expect(host.power.state).toBe("down");

      await expect(powerOnProtectedHost(db, ADMIN, hostId)).rejects.toMatchObject({
        code: "conflict",
        message: expect.stringMatching(/^The shutdown trigger of faults-h holds: /),
      });
      expect(chassis.powerOnRequests).toEqual([]);

      ups.control.restore();
      await latchAsleepOnMains(upsId);
      expect((await powerOnProtectedHost(db, ADMIN, hostId)).result).toBe("sent");
      await waitFor("pve-h0 up", async () => host.power.state === "up");
      const released = await eventsOf(upsId, "latch.released");
      expect(released.map((e) => [e.runId, e.message])).toEqual([
        [
          null,
          expect.stringMatching(
            /^faults-h: latch released by test-admin's power-on of .+ \(it fired /,
          ),
        ],
      ]);

      ups.control.jumpToLowBattery();
      const second = await nthRunSettled(targetId, 2);
      expect(dueSince(second).getTime()).toBeGreaterThan(dueSince(first).getTime());
      expect(host.power.state).toBe("down");
      expect(shutdowns(host)).toHaveLength(2);
    } finally {
      ups.control.restore();
      await setMode("dry-run");
    }
  }, 180_000);
  it("a host back on its own (its BIOS once the UPS's output came back): the next loss of mains inside the latch's window is a new outage and shuts it down again", async () => {
    const { ups, upsId, host, targetId, bmc } = await protectedHostWithBmc("faults-b", "pve-b0");
    await setMode("armed");
    try {
      ups.control.jumpToLowBattery();
      const first = await nthRunSettled(targetId, 1);
      expect(host.power.state).toBe("down");

      ups.control.restore();
      await latchAsleepOnMains(upsId);
      // Nobody asked the console: the machine powers itself on.
      await host.power.powerOn();
      expect(bmc.node(host.name).chassis.powerOnRequests).toEqual([]);

      ups.control.jumpToLowBattery();
      const second = await nthRunSettled(targetId, 2);
      expect(dueSince(second).getTime()).toBeGreaterThan(dueSince(first).getTime());
      expect(host.power.state).toBe("down");
      expect(shutdowns(host)).toHaveLength(2);
      const fired = await eventsOf(upsId, "trigger.fired");
      expect(fired.map((e) => e.message)).toEqual([
        expect.stringMatching(/^faults-b: trigger fired: /),
        expect.stringMatching(/— a new outage \(the shutdown of the one latched .+ is over\)/),
      ]);
    } finally {
      ups.control.restore();
      await setMode("dry-run");
    }
  }, 180_000);
});
