import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";

import { powerEvents } from "@/lib/db/schema";
import { setPowerController } from "@/lib/power-controllers/store";
import {
  setTargetPowerController,
  targetPowerController,
} from "@/lib/power-controllers/target-controller";
import { bringBackNow } from "@/lib/power/operations/bring-back-now";
import { previewPowerBack } from "@/lib/power/queries/power-back-preview";
import { actionsOfRun, type PowerRunAction } from "@/lib/power/records/run-actions";
import { checkPowerControllers } from "@/lib/power/self-test/check-power-controllers";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { startLabCluster, type LabCluster } from "@/lab";
import { startLabPbs, type LabPbs } from "@/lab/pbs/server";
import {
  clusterNodePower,
  labPbsPower,
  startLabPowerControllers,
  type LabNodePower,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { registerTestDatabase } from "@/test/db";
import {
  ADMIN,
  addUps,
  persistReading,
  protectPbs,
  setModeConfirmingAll,
  shutdownInput,
} from "@/test/fixtures/power";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { hostsOfTargets, labIpmi, labRedfish } from "@/test/fixtures/lab-bmc";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";

/**
 * A backup server's power controller (issue 30, item 1) through the real worker: a lab cluster
 * and a lab Proxmox Backup Server on one UPS, every machine with a lab BMC that switches its real
 * lab power (the PBS's: its HTTPS API on its port answers, or nothing does). An armed outage
 * takes all of it down; the way back powers the PBS on last and waits for its API.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const labs: LabCluster[] = [];
const servers: LabPbs[] = [];
const bmcs: LabPowerControllers[] = [];
let counter = 0;

type Setup = {
  lab: LabCluster;
  pbs: LabPbs;
  bmc: LabPowerControllers;
  upsId: string;
  targets: Record<string, string>;
  pbsTarget: string;
  /** Machine names in the order their power came back. */
  poweredOn: string[];
};

/** Counts each power-on the chassis hands to the machine, in order. */
const recorded = (power: LabNodePower, into: string[]): LabNodePower => ({
  ...power,
  powerOn: () => {
    into.push(power.name);
    return power.powerOn();
  },
});

async function protectedClusterAndPbs(): Promise<Setup> {
  const { db } = database;
  const n = ++counter;
  const lab = await startLabCluster({
    nodes: 2,
    name: `pbs-back-${n}`,
    timing: {
      guestShutdownMs: 100,
      haDisarmMs: 100,
      haRecoveryMs: 100,
      nodeShutdownDelayMs: 100,
      guestStartMs: 100,
    },
  });
  labs.push(lab);
  const pbs = await startLabPbs({ name: `pbs-back-${n}` });
  servers.push(pbs);
  const poweredOn: string[] = [];
  const bmc = await startLabPowerControllers({
    nodes: [
      ...lab.nodes.map((node) => recorded(clusterNodePower(lab, node.name), poweredOn)),
      recorded(labPbsPower(pbs), poweredOn),
    ],
  });
  bmcs.push(bmc);
  const { upsId, targets } = await protectLabCluster(db, lab);
  for (const [node, hostId] of Object.entries(await hostsOfTargets(db, targets))) {
    await setPowerController(db, { hostId, actor: "test", controller: labRedfish(bmc, node) });
  }
  const pbsTarget = await protectPbs(db, pbs, { feeds: [upsId] });
  await setTargetPowerController(db, {
    targetId: pbsTarget,
    actor: "test",
    controller: labRedfish(bmc, pbs.name),
  });
  return { lab, pbs, bmc, upsId, targets, pbsTarget, poweredOn };
}

async function shutDown(setup: Setup) {
  const { db } = database;
  await persistReading(db, setup.upsId, true);
  const runId = await db.transaction((tx) =>
    startShutdownRun(
      tx,
      shutdownInput(setup.upsId, [...Object.values(setup.targets), setup.pbsTarget]),
    ),
  );
  const run = await settled(db, runId, 180_000);
  expect(run.status, run.failureReason ?? "").toBe("succeeded");
  return runId;
}

const labels = (actions: PowerRunAction[], pattern: RegExp) =>
  actions.filter((a) => pattern.test(a.label)).map((a) => [a.label, a.outcome]);

beforeAll(async () => {
  worker = await startClusterTestWorker(database, null);
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  for (const bmc of bmcs) await bmc.stop();
  for (const pbs of servers) await pbs.stop();
  for (const lab of labs) await lab.stop();
});

describe("the way back of a backup server with a power controller", () => {
  it("armed outage: cluster and PBS down; the way back powers the nodes on, then the PBS last through its Redfish BMC, and waits for its API on its port", async () => {
    const { db } = database;
    const setup = await protectedClusterAndPbs();
    const { lab, pbs } = setup;
    await setModeConfirmingAll(db, "armed");
    await shutDown(setup);
    for (const node of lab.model.nodes) expect(node.online).toBe(false);
    expect(pbs.state).toBe("down");

    await persistReading(db, setup.upsId, false);
    // What "Bring back now" shows: the PBS last, with its controller.
    const preview = await previewPowerBack(db);
    expect(preview).toMatchObject({ mode: "armed" });
    const hosts = "hosts" in preview ? preview.hosts : [];
    expect(hosts.at(-1)).toEqual({ name: pbs.name, controller: "redfish" });

    const { runId } = await bringBackNow(db, {}, ADMIN);
    const run = await settled(db, runId, 180_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    // The PBS last, after every node of the cluster.
    expect(setup.poweredOn).toHaveLength(3);
    expect(setup.poweredOn.at(-1)).toBe(pbs.name);
    expect(new Set(setup.poweredOn.slice(0, 2))).toEqual(new Set(lab.nodes.map((n) => n.name)));
    const actions = await actionsOfRun(db, runId);
    expect(labels(actions, /^power on/).at(-1)).toEqual([`power on ${pbs.name}`, "ok"]);
    // Waited for: its API answered (on its own port, its pinned certificate) before the run ended.
    expect(labels(actions, new RegExp(`^API of ${pbs.name}$`))).toEqual([
      [`API of ${pbs.name}`, "ok"],
    ]);
    expect(pbs.state).toBe("up");
    const events = await db
      .select({ kind: powerEvents.kind, message: powerEvents.message })
      .from(powerEvents)
      .where(eq(powerEvents.runId, runId))
      .orderBy(asc(powerEvents.id));
    expect(events.map((e) => e.kind)).toEqual(["power_back.started", "power_back.done"]);
  }, 300_000);

  it("dry-run: the PBS's power-on is recorded as would-do and nothing reaches its BMC", async () => {
    const { db } = database;
    const setup = await protectedClusterAndPbs();
    const { bmc, pbs } = setup;
    await setModeConfirmingAll(db, "dry-run");
    await shutDown(setup);
    expect(pbs.state).toBe("up");
    await persistReading(db, setup.upsId, false);
    const { runId } = await bringBackNow(db, {}, ADMIN);
    const run = await settled(db, runId, 180_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    for (const node of bmc.nodes) expect(node.chassis.powerOnRequests).toEqual([]);
    const actions = await actionsOfRun(db, runId);
    expect(labels(actions, new RegExp(`^power on ${pbs.name}$`))).toEqual([
      [`power on ${pbs.name}`, "would-do"],
    ]);
  }, 300_000);

  it("self-test: a PBS controller with a wrong password fails its login check with the reason; one reading Off while the PBS answers belongs to another machine", async () => {
    const { db } = database;
    const pbs = await startLabPbs({ name: "pbs-selftest" });
    servers.push(pbs);
    const other = await startLabPbs({ name: "pbs-other" });
    servers.push(other);
    const bmc = await startLabPowerControllers({
      nodes: [labPbsPower(pbs), labPbsPower(other)],
    });
    bmcs.push(bmc);
    const targetId = await protectPbs(db, pbs, { feeds: [await addUps(db, "ups-pbs-selftest")] });
    await setTargetPowerController(db, {
      targetId,
      actor: "test",
      controller: labRedfish(bmc, pbs.name, { password: "not-the-password" }),
    });
    const mine = (checks: Awaited<ReturnType<typeof checkPowerControllers>>) =>
      checks.filter((c) => c.key.endsWith(`:${targetId}`)).map((c) => [c.key, c.verdict]);
    const one = (checks: Awaited<ReturnType<typeof checkPowerControllers>>, kind: string) =>
      checks.find((c) => c.key === `${kind}:${targetId}`)!;
    const checks = await checkPowerControllers(db, { timeoutMs: 10_000 });
    expect(mine(checks)).toEqual([
      [`power-controller-reach:${targetId}`, "ok"],
      [`power-controller-login:${targetId}`, "failed"],
      [`power-controller-state:${targetId}`, "could-not-check"],
    ]);
    const login = one(checks, "power-controller-login");
    expect(login.subject).toBe(pbs.name);
    expect(login.next).toContain("/power/targets");
    const read = await targetPowerController(db, targetId, { read: true, timeoutMs: 10_000 });
    expect(read.state).toMatchObject({ state: "unknown", problem: "credentials" });

    // The other machine's BMC (IPMI), that machine cut off: Off while this PBS answers.
    await other.powerOff();
    await setTargetPowerController(db, {
      targetId,
      actor: "test",
      controller: labIpmi(bmc, other.name),
    });
    const again = await checkPowerControllers(db, { timeoutMs: 10_000 });
    expect(mine(again)).toEqual([
      [`power-controller-reach:${targetId}`, "ok"],
      [`power-controller-login:${targetId}`, "ok"],
      [`power-controller-state:${targetId}`, "failed"],
    ]);
    expect(one(again, "power-controller-state").reason).toContain(
      "while the backup server's API answers",
    );
  }, 120_000);
});
