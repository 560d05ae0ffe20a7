import { afterAll, beforeAll, expect, it } from "vitest";
import { and, asc, eq, isNull } from "drizzle-orm";
import { powerEvents, runs } from "@/lib/db/schema";
import { protectLabCluster } from "@/test/fixtures/protected-lab-cluster";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { setClusterPolicy } from "@/lib/power/operations/set-cluster-policy";
import { startPowerMonitor, type PowerMonitor } from "@/lib/power/monitor/power-monitor";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import type { ShutdownInput } from "@/lib/power/shutdown/shutdown-plan";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { startLabCluster, type LabCluster } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { registerTestDatabase } from "@/test/db";
import { ADMIN, nutSourceOf, setModeConfirmingAll } from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import type { WorkerHandle } from "@/worker/runner";
import { startPowerTestWorker } from "@/test/fixtures/protected-lab-cluster";

/**
 * The two thresholds driven by the power monitor itself, against a lab UPS's NUT face and a
 * non-Ceph lab cluster: the first threshold's reading starts the first stage, the trigger's the
 * final one. The UPS's values are set by hand (time held), so each threshold is crossed once.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle | undefined;
let monitor: PowerMonitor | undefined;
let lab: LabCluster | undefined;
let ups: LabUps | undefined;

beforeAll(async () => {
  worker = await startPowerTestWorker(database);
}, 60_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await lab?.stop();
  await ups?.stop();
});

const powerRuns = () =>
  database.db
    .select()
    .from(runs)
    .where(and(isNull(runs.hostId), eq(runs.pipeline, "power-shutdown")))
    .orderBy(asc(runs.createdAt));

it("the monitor starts the first stage at the cluster's first threshold and the final stage at the trigger", async () => {
  const { db, url } = database;
  ups = await startLabUps({ name: "consups", snmp: false });
  lab = await startLabCluster({
    nodes: 3,
    name: "cons-monitor",
    guests: [
      { vmid: 101, type: "qemu", node: "pve1", storage: "nfs", ha: true },
      { vmid: 201, type: "lxc", node: "pve2", storage: "nfs" },
      { vmid: 390, type: "qemu", node: "pve3", storage: "local", name: "clupilot" },
    ],
    timing: {
      guestShutdownMs: 100,
      haDisarmMs: 100,
      haRecoveryMs: 100,
      nodeShutdownDelayMs: 100,
      migrateMs: 300,
    },
    apiAuthFailureDelayMs: 50,
  });
  const { targets } = await protectLabCluster(db, lab, { upsSource: nutSourceOf(ups) });
  const [group] = await loadClusterGroups(db);
  await setClusterPolicy(
    db,
    {
      id: group!.id,
      policy: "consolidate",
      consolidate: { firstThreshold: { chargeBelowPercent: 90 } },
    },
    ADMIN,
  );
  await updatePowerSettings(
    db,
    {
      triggers: { chargeBelowPercent: 30, runtimeBelowSeconds: null, onBatteryForSeconds: null },
      shutdown: {
        callTimeoutSeconds: 3,
        targetDownSeconds: 15,
        guestTimeoutSeconds: 5,
        consoleGuest: { node: "pve3", vmid: 390 },
      },
    },
    ADMIN,
  );
  await setModeConfirmingAll(db, "armed");
  monitor = await startPowerMonitor({
    connectionString: url,
    supervisorIntervalMs: 300,
    log: () => {},
  });

  // On battery at 85 %: the first threshold (charge below 90 %) fires, the trigger does not.
  ups.control.set({ held: true });
  ups.control.pullPlug();
  ups.control.set({ chargePercent: 85, held: true });
  const [first] = await waitFor(
    "the first stage's run",
    async () => {
      const found = await powerRuns();
      return found.length > 0 && found;
    },
    30_000,
    100,
  );
  const firstInput = (first!.context as { input: ShutdownInput }).input;
  expect(firstInput.stages?.map((s) => s.clusterId)).toEqual([group!.id]);
  expect(firstInput.trigger.reason).toMatch(
    /^first threshold of cluster cons-monitor: charge 85 % is below 90 %/,
  );
  expect(firstInput.targets.map((t) => t.targetId).sort()).toEqual(
    [targets.pve1, targets.pve2].sort(),
  );
  expect((await settled(db, first!.id, 120_000)).status).toBe("succeeded");
  expect(lab.model.guests.get(101)!.node).toBe("pve3");
  expect(lab.model.guests.get(201)!.node).toBe("pve3");
  expect(lab.model.nodes.map((n) => n.online)).toEqual([false, false, true]);
  const [fired] = await db
    .select()
    .from(powerEvents)
    .where(eq(powerEvents.kind, "consolidate.fired"));
  expect(fired!.message).toMatch(
    /first threshold of cluster cons-monitor fired: charge 85 % is below 90 %/,
  );

  // At 25 % the trigger fires: the node that stays goes down, nothing is called twice.
  ups.control.set({ chargePercent: 25, held: true });
  const final = await waitFor(
    "the final stage's run",
    async () => {
      const found = await powerRuns();
      return found.length > 1 && found[1]!;
    },
    30_000,
    100,
  );
  const finalInput = (final.context as { input: ShutdownInput }).input;
  expect(finalInput.targets.map((t) => t.targetId)).toEqual([targets.pve3]);
  expect((await settled(db, final.id, 120_000)).status).toBe("succeeded");
  expect(lab.model.node("pve3")!.online).toBe(false);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(await powerRuns()).toHaveLength(2);
  await setPowerMode(db, { mode: "dry-run" }, ADMIN);
}, 240_000);
