import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerEvents, powerTargets, runs, upsMonitorState } from "@/lib/db/schema";
import { setPowerController } from "@/lib/power-controllers/store";
import { bringBackNow } from "@/lib/power/operations/bring-back-now";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import type { LabNode } from "@/lab";
import { startLabPowerControllers } from "@/lab/power-controllers";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { registerTestDatabase } from "@/test/db";
import { addUps, ADMIN, nutSourceOf, onboardedLabNode, protectHost } from "@/test/fixtures/power";
import { startPowerTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import type { WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

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
  const all = await database.db.select({ id: powerTargets.id }).from(powerTargets);
  await setPowerMode(database.db, { mode, confirmedTargetIds: all.map((t) => t.id) }, ADMIN);
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

describe("the way back and the next outage", () => {
  it("the way back ends the outage: a host it powered on is shut down again when mains goes once more", async () => {
    const { db } = database;
    const { ups, upsId } = await labUps("faults-w");
    const { node: host, hostId } = await onboardedLabNode(db, "pve-w0");
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
    const redfish = bmc.node(host.name).redfish;
    await setPowerController(db, {
      hostId,
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
    await setMode("armed");
    try {
      ups.control.jumpToLowBattery();
      const [first] = await waitFor("the outage's run", async () => {
        const list = await runsOf(targetId);
        return list.length > 0 && list;
      });
      expect((await settled(db, first!.id, 60_000)).status).toBe("succeeded");
      expect(host.power.state).toBe("down");

      // Mains back: the latch sleeps (dormant) — it still names the outage.
      ups.control.restore();
      await waitFor("the latch dormant on mains", async () => {
        const state = await stateOf(upsId);
        return state?.latchDormant === true && state.lastReading?.onBattery === false;
      });
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
      const runs = await waitFor("the new outage's run", async () => {
        const list = await runsOf(targetId);
        return list.length > 1 && list;
      });
      const second = runs[1]!;
      const dueSince = (run: typeof second) =>
        (run.context.input as { targets: Array<{ dueSince: string }> }).targets[0]!.dueSince;
      expect(new Date(dueSince(second)).getTime()).toBeGreaterThan(
        new Date(dueSince(first!)).getTime(),
      );
      expect((await settled(db, second.id, 60_000)).status).toBe("succeeded");
      expect(host.power.state).toBe("down");
      expect(shutdowns(host)).toHaveLength(2);
    } finally {
      ups.control.restore();
      await setMode("dry-run");
    }
  }, 180_000);
});
