import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq } from "drizzle-orm";

import { powerBackGuests, runs } from "@/lib/db/schema";
import { setPowerController } from "@/lib/power-controllers/store";
import { refreshClusterGroups } from "@/lib/power/cluster-refresh/refresh-cluster-groups";
import { watchPowerBack } from "@/lib/power/monitor/power-back-watch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { outageToBringBack } from "@/lib/power/power-back-pipeline/start-power-back";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import type { LabNode } from "@/lab";
import {
  labNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { readGuestStarts, readRunning, writeRunning, writeVmConfig } from "@/lab/pve/state";
import { registerTestDatabase } from "@/test/db";
import {
  ADMIN,
  addUps,
  onboardedLabNode,
  persistOnMains,
  persistReading,
  protectHost,
  shutdownInput,
} from "@/test/fixtures/power";
import { startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";
import { labIpmi, labRedfish } from "@/test/fixtures/lab-bmc";

/**
 * The way back of two standalone hosts (issue 30, items 3-4) through the real worker against
 * two full lab nodes (real SSH onboarding, the lab's Proxmox API over HTTPS): one brought back
 * by its Redfish BMC (logging in with a Redfish session), the other by its IPMI BMC (Debian's
 * ipmitool against Debian's ipmi_sim). A lab node's guests stop when it loses power, as a real
 * node's do; the way back starts the ones that ran before through `POST …/status/start`.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const nodes: LabNode[] = [];
let bmc: LabPowerControllers;
const hostIds: Record<string, string> = {};
const targets: Record<string, string> = {};
let upsId: string;
/** Node names in the order their power came back. */
const poweredOn: string[] = [];

const vm = (name: string, startup?: string) =>
  new Map([
    ["name", name],
    ["memory", "1024"],
    ["cores", "1"],
    ...(startup ? [["startup", startup]] : []),
  ] as [string, string][]);

beforeAll(async () => {
  const { db } = database;
  worker = await startClusterTestWorker(database, null);
  for (const name of ["pve-s1", "pve-s2"]) {
    const { node, hostId } = await onboardedLabNode(db, name);
    nodes.push(node);
    hostIds[name] = hostId;
  }
  bmc = await startLabPowerControllers({
    nodes: nodes.map((node) => {
      const power = labNodePower(node);
      return {
        ...power,
        powerOn: () => {
          poweredOn.push(node.name);
          return power.powerOn();
        },
      };
    }),
  });
  upsId = await addUps(db);
  // Stage 0 and 1: standalone hosts come back in reverse stage order, pve-s2 first.
  targets["pve-s1"] = await protectHost(db, hostIds["pve-s1"]!, { feeds: [upsId], stage: 0 });
  targets["pve-s2"] = await protectHost(db, hostIds["pve-s2"]!, { feeds: [upsId], stage: 1 });
  // The console's discovery: both answer that they are in no cluster.
  await refreshClusterGroups(db, { all: true });
  await setPowerController(db, {
    hostId: hostIds["pve-s1"]!,
    actor: "test",
    controller: labRedfish(bmc, "pve-s1", { auth: "session" }),
  });
  await setPowerController(db, {
    hostId: hostIds["pve-s2"]!,
    actor: "test",
    controller: labIpmi(bmc, "pve-s2"),
  });
}, 240_000);

afterAll(async () => {
  await worker?.stop();
  await bmc?.stop();
  for (const node of nodes) await node.stop();
});

const node = (name: string) => nodes.find((n) => n.name === name)!;

describe("the way back of standalone hosts", () => {
  it("two standalone hosts armed → down (their guests with them) → mains back → each powered on by its own controller, its recorded guests running again in startup order", async () => {
    const { db } = database;
    const s1 = node("pve-s1");
    const s2 = node("pve-s2");
    // pve-s1: 141 (order 1, up 1 s) before 140 (order 2); 142 stopped by its operator.
    writeVmConfig(s1.root, s1.name, 140, vm("web", "order=2"));
    writeVmConfig(s1.root, s1.name, 141, vm("db", "order=1,up=1"));
    writeVmConfig(s1.root, s1.name, 142, vm("kept-off", "order=1"));
    writeRunning(s1.root, new Set([140, 141]));
    // pve-s2: 151 (order 1) before 150 (no order: last).
    writeVmConfig(s2.root, s2.name, 150, vm("files"));
    writeVmConfig(s2.root, s2.name, 151, vm("dns", "order=1"));
    writeRunning(s2.root, new Set([150, 151]));
    const startsBefore = {
      s1: readGuestStarts(s1.root).length,
      s2: readGuestStarts(s2.root).length,
    };

    await setPowerMode(db, { mode: "armed", confirmedTargetIds: Object.values(targets) }, ADMIN);
    await updatePowerSettings(
      db,
      { powerBack: { mainsStableMinutes: 1, minChargePercent: 50 } },
      ADMIN,
    );

    // The outage: the armed shutdown takes both hosts down, and their guests with them.
    await persistReading(db, upsId, true);
    const shutdownRunId = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(upsId, Object.values(targets))),
    );
    const shutdown = await settled(db, shutdownRunId, 180_000);
    expect(shutdown.status, shutdown.failureReason ?? "").toBe("succeeded");
    expect([s1.power.state, s2.power.state]).toEqual(["down", "down"]);
    expect([...readRunning(s1.root)]).toEqual([]);
    expect([...readRunning(s2.root)]).toEqual([]);
    const recorded = await db
      .select()
      .from(powerBackGuests)
      .where(and(eq(powerBackGuests.runId, shutdownRunId), eq(powerBackGuests.state, "running")))
      .orderBy(asc(powerBackGuests.node), asc(powerBackGuests.vmid));
    expect(recorded.map((g) => [g.node, g.vmid, g.startupOrder, g.upSeconds])).toEqual([
      ["pve-s1", 140, 2, null],
      ["pve-s1", 141, 1, 1],
      ["pve-s2", 150, null, null],
      ["pve-s2", 151, 1, null],
    ]);
    expect(poweredOn).toEqual([]);

    // Mains back for the stable minute, charged, runtime for the shutdown again: the monitor
    // starts the way back.
    const outage = (await outageToBringBack(db, new Date()))!;
    expect(outage.shutdownRunIds).toEqual([shutdownRunId]);
    await persistOnMains(db, upsId, {
      mainsMs: 60_000,
      chargePercent: 80,
      runtimeSeconds: outage.budgetSeconds + 60,
      rawStatus: "OL CHRG",
    });
    await watchPowerBack(db, new Date(), () => {});
    const started = await db
      .select({ id: runs.id })
      .from(runs)
      .where(eq(runs.pipeline, POWER_BACK))
      .orderBy(asc(runs.createdAt), asc(runs.id));
    expect(started).toHaveLength(1);
    const run = await settled(db, started[0]!.id, 180_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");

    // Each host by its own controller, in reverse stage order.
    expect(poweredOn).toEqual(["pve-s2", "pve-s1"]);
    expect(bmc.node("pve-s2").chassis.powerOnRequests).toEqual(["ipmi chassis power on"]);
    expect(bmc.node("pve-s1").chassis.powerOnRequests).toEqual(["redfish On"]);
    // Every Redfish session the way back opened was deleted.
    expect(bmc.node("pve-s1").redfish.openSessions()).toEqual([]);
    expect(bmc.node("pve-s1").redfish.sessionLog.length).toBeGreaterThan(0);
    expect([s1.power.state, s2.power.state]).toEqual(["up", "up"]);
    const actions = await actionsOfRun(db, started[0]!.id);
    expect(
      actions.filter((a) => /^power on/.test(a.label)).map((a) => [a.label, a.outcome]),
    ).toEqual([
      ["power on pve-s2", "ok"],
      ["power on pve-s1", "ok"],
    ]);

    // Exactly the guests that ran, running again (142 stays stopped), each node's in order.
    expect([...readRunning(s1.root)].sort()).toEqual([140, 141]);
    expect([...readRunning(s2.root)].sort()).toEqual([150, 151]);
    expect(readGuestStarts(s1.root).slice(startsBefore.s1)).toEqual([141, 140]);
    expect(readGuestStarts(s2.root).slice(startsBefore.s2)).toEqual([151, 150]);
    expect(
      actions
        .filter((a) => /^start /.test(a.label))
        .map((a) => a.outcome)
        .sort(),
    ).toEqual(["ok", "ok", "ok", "ok"]);
  }, 600_000);
});
