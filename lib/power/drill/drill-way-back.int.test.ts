import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq } from "drizzle-orm";
import * as wayBackRoute from "@/app/api/power/drills/[runId]/way-back/route";
import { getDb } from "@/lib/db/client";
import { auditLog, powerEvents, runs } from "@/lib/db/schema";
import { watchPowerBack } from "@/lib/power/monitor/power-back-watch";
import { bringBackNow } from "@/lib/power/operations/bring-back-now";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { outageToBringBack } from "@/lib/power/power-back-pipeline/start-power-back";
import { latestPowerBackRun, powerBackRunView } from "@/lib/power/queries/power-back-run";
import { readPowerPlanPage } from "@/lib/power/queries/power-plan";
import { listPowerRuns } from "@/lib/power/queries/timeline";
import { actionsOfRun, type PowerRunAction } from "@/lib/power/records/run-actions";
import { startLabCluster, type LabCluster } from "@/lab";
import {
  clusterNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import { createTestUser, type TestUser } from "@/test/auth";
import { ADMIN, persistOnMains, persistReading, shutdownInput } from "@/test/fixtures/power";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { registerProcessTestDatabase, routeParams } from "@/test/process-database";
import { settled } from "@/test/runs";
import type { WorkerHandle } from "@/worker/runner";
import { drillWayBack, startDrillWayBack } from "./drill-way-back";
import { startDrill } from "./start-drill";
import { giveLabRedfish } from "@/test/fixtures/lab-bmc";

/**
 * A drill's way back (issue 30, item 6) through the real worker against a lab cluster over real
 * HTTPS, each node with the lab's Redfish BMC (TLS) that switches its real lab power: three
 * nodes, Ceph monitors on pve2 and pve3, guests with startup orders and one (121) the operator
 * had stopped. The UPS reads on mains throughout: a drill is rehearsed on mains.
 */

const database = registerProcessTestDatabase();
let worker: WorkerHandle;
let lab: LabCluster;
let bmc: LabPowerControllers;
let upsId: string;
let targets: Record<string, string>;
let admin: TestUser;
let operator: TestUser;
/** Node names in the order their BMC took a power-on. */
const poweredOn: string[] = [];

beforeAll(async () => {
  const db = getDb();
  worker = await startClusterTestWorker({ db, url: database.url }, null);
  [admin, operator] = await Promise.all([
    createTestUser(db, "admin"),
    createTestUser(db, "operator"),
  ]);
  lab = await startLabCluster({
    nodes: 3,
    name: "drill-back",
    guests: [
      { vmid: 101, type: "qemu", node: "pve1", storage: "ceph", ha: true, startup: "order=2" },
      { vmid: 102, type: "lxc", node: "pve1", storage: "ceph", startup: "order=1" },
      { vmid: 111, type: "qemu", node: "pve2", storage: "local" },
      { vmid: 121, type: "qemu", node: "pve3", storage: "local", status: "stopped" },
      { vmid: 122, type: "lxc", node: "pve3", storage: "local", startup: "order=3" },
    ],
    ceph: { monitors: ["pve2", "pve3"] },
    timing: {
      guestShutdownMs: 100,
      haDisarmMs: 100,
      haRecoveryMs: 100,
      nodeShutdownDelayMs: 100,
      guestStartMs: 100,
    },
    apiAuthFailureDelayMs: 50,
  });
  bmc = await startLabPowerControllers({
    nodes: lab.nodes.map((n) => {
      const power = clusterNodePower(lab, n.name);
      return {
        ...power,
        powerOn: () => {
          poweredOn.push(n.name);
          return power.powerOn();
        },
      };
    }),
  });
  const protectedLab = await protectLabCluster(db, lab, { upsName: "ups-drill-back" });
  upsId = protectedLab.upsId;
  targets = protectedLab.targets;
  await giveLabRedfish(db, targets, bmc);
  await persistReading(db, upsId, false);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await bmc?.stop();
  await lab?.stop();
});

async function setMode(mode: "armed" | "dry-run") {
  await setPowerMode(
    getDb(),
    mode === "armed" ? { mode, confirmedTargetIds: Object.values(targets) } : { mode },
    ADMIN,
  );
}

async function drillToTheEnd(live: boolean): Promise<string> {
  const db = getDb();
  const { runId } = await startDrill(
    db,
    live ? { upsId, live, confirmedTargetIds: Object.values(targets) } : { upsId, live },
    ADMIN,
  );
  const run = await settled(db, runId, 120_000);
  expect(run.status, run.failureReason ?? "").toBe("succeeded");
  return runId;
}

const post = (user: TestUser, runId: string, body: unknown) =>
  wayBackRoute.POST(
    new Request(`http://test/api/power/drills/${runId}/way-back`, {
      method: "POST",
      headers: user.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    }),
    routeParams({ runId }),
  );

async function powerBackRunIds(): Promise<string[]> {
  const rows = await getDb()
    .select({ id: runs.id })
    .from(runs)
    .where(eq(runs.pipeline, POWER_BACK))
    .orderBy(asc(runs.createdAt), asc(runs.id));
  return rows.map((r) => r.id);
}

const labels = (actions: PowerRunAction[], pattern: RegExp) =>
  actions.filter((a) => pattern.test(a.label)).map((a) => [a.label, a.outcome]);

const runningGuests = () =>
  [...lab.model.guests.values()]
    .filter((g) => g.status === "running")
    .map((g) => g.vmid)
    .sort((a, b) => a - b);

const changesSent = (before: number[]) =>
  lab.nodes.flatMap((n, i) => n.api.requests.slice(before[i]).filter((r) => r.method !== "GET"));

async function eventsOf(runId: string) {
  return getDb()
    .select()
    .from(powerEvents)
    .where(eq(powerEvents.runId, runId))
    .orderBy(asc(powerEvents.id));
}

describe("the way back of a drill", () => {
  it("after a dry-run drill, even while armed, records every power-on and start as would-do and sends nothing to any controller or node; it is marked a drill and never the outage's way back", async () => {
    const db = getDb();
    await setMode("armed");
    try {
      // The plan preview shows the way back beside the shutdown: before any run listed the
      // nodes, the hosts and the clusters, and no guest yet (the shutdown records them).
      const before = (await readPowerPlanPage(db)).wayBack[upsId]!;
      expect(before.plan.hosts.map((h) => [h.name, h.controller])).toEqual([
        [expect.stringMatching(/^pve3/), "redfish"],
        [expect.stringMatching(/^pve2/), "redfish"],
        [expect.stringMatching(/^pve1/), "redfish"],
      ]);
      expect(before.plan.clusters).toEqual([
        {
          name: expect.any(String),
          nodes: ["pve3", "pve2", "pve1"],
          cephFlags: ["noout", "nobackfill", "norecover", "norebalance"],
          haDisarmed: true,
        },
      ]);
      expect(before.plan.guests).toEqual([]);
      expect(before.guestsFrom).toEqual([]);

      // A real outage in dry-run, not brought back yet: the drill's way back must leave it open.
      await setMode("dry-run");
      await persistReading(db, upsId, true);
      const outageRunId = await db.transaction((tx) =>
        startShutdownRun(tx, shutdownInput(upsId, Object.values(targets))),
      );
      const outageRun = await settled(db, outageRunId, 120_000);
      expect(outageRun.status, outageRun.failureReason ?? "").toBe("succeeded");
      await persistReading(db, upsId, false);
      await setMode("armed");

      const drillRunId = await drillToTheEnd(false);
      // After the dry drill listed the nodes: its guests, in start order, and from which run.
      const after = (await readPowerPlanPage(db)).wayBack[upsId]!;
      expect(after.plan.guests.map((g) => [g.vmid, g.order])).toEqual([
        [102, 1],
        [101, 2],
        [122, 3],
        [111, null],
      ]);
      expect(after.guestsFrom.map((f) => f.runId)).toEqual([drillRunId]);
      const preview = await drillWayBack(db, drillRunId);
      expect(preview.refused).toBe(null);
      expect(preview.live).toEqual({ offered: false, why: expect.stringMatching(/dry-run/) });
      // The plan the run will freeze: monitors first, each host's stored controller, exactly
      // the guests that ran (121 was stopped), in their start order.
      expect(preview.plan!.hosts.map((h) => [h.name, h.controller])).toEqual([
        [expect.stringMatching(/^pve3/), "redfish"],
        [expect.stringMatching(/^pve2/), "redfish"],
        [expect.stringMatching(/^pve1/), "redfish"],
      ]);
      expect(preview.plan!.guests.map((g) => g.vmid)).toEqual([102, 101, 122, 111]);

      // A dry drill took nothing down: a live way back of it is refused, naming the field.
      const live = await post(admin, drillRunId, {
        live: true,
        confirmedTargetIds: Object.values(targets),
      });
      expect(live.status).toBe(409);
      expect(
        ((await live.json()) as { fieldErrors: Record<string, string[]> }).fieldErrors,
      ).toHaveProperty("live");
      // Operators cannot start one.
      expect((await post(operator, drillRunId, { live: false })).status).toBe(403);
      expect(await powerBackRunIds()).toEqual([]);

      const requestsBefore = lab.nodes.map((n) => n.api.requests.length);
      const response = await post(admin, drillRunId, { live: false });
      expect(response.status).toBe(201);
      const { runId } = (await response.json()) as { runId: string };
      const run = await settled(db, runId, 120_000);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      for (const node of bmc.nodes) expect(node.chassis.powerOnRequests).toEqual([]);
      expect(changesSent(requestsBefore)).toEqual([]);
      expect(lab.model.guestStarts).toEqual([]);
      const actions = await actionsOfRun(db, runId);
      expect(actions.length).toBeGreaterThan(0);
      expect(actions.every((a) => a.outcome === "would-do")).toBe(true);
      expect(labels(actions, /^start /).map(([label]) => label)).toEqual([
        "start lxc 102",
        "start qemu 101",
        "start lxc 122",
        "start qemu 111",
      ]);

      // Marked a drill everywhere: the notifications, the runs list, its one line.
      const events = await eventsOf(runId);
      expect(events.map((e) => e.kind)).toEqual(["power_back.started", "power_back.done"]);
      for (const event of events) {
        expect(event.message).toMatch(/^Drill: way back \(dry-run\)/);
        expect(event.data).toMatchObject({ drill: true });
      }
      const listed = (await listPowerRuns(db)).runs.find((r) => r.id === runId)!;
      expect(listed.origin).toEqual({
        kind: "drill-way-back",
        by: admin.user.name,
        live: false,
        drillRunId,
      });
      expect(listed.verdict.text).toMatch(/^drill — dry-run: would power on /);
      expect((await powerBackRunView(db, runId))!.verdict.tone).toBe("dry-run");
      // Audited with who and what.
      const audit = await db
        .select()
        .from(auditLog)
        .where(
          and(eq(auditLog.action, "power.drill_way_back"), eq(auditLog.target, `run:${runId}`)),
        );
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ actorName: admin.user.name, outcome: "success" });
      // Never the outage's way back: the outage stays open, not even "tried" for the monitor.
      expect(await outageToBringBack(db, new Date())).toMatchObject({
        shutdownRunIds: [outageRunId],
        tried: false,
      });
      expect((await latestPowerBackRun(db))?.origin.kind).toBe("drill-way-back");
      // Close the outage with a dry-run way back of its own, for the next test.
      await setMode("dry-run");
      const closing = await settled(db, (await bringBackNow(db, {}, ADMIN)).runId, 120_000);
      expect(closing.status, closing.failureReason ?? "").toBe("succeeded");
      expect(await outageToBringBack(db, new Date())).toBe(null);
    } finally {
      await setMode("dry-run");
    }
  }, 300_000);

  it("after a live drill: refused unarmed and without the exact confirmation (checked server side), never started by the monitor's policy; armed and confirmed it powers on the drill's nodes and starts exactly the guests that ran", async () => {
    const db = getDb();
    await setMode("armed");
    const drillRunId = await drillToTheEnd(true);
    for (const node of lab.model.nodes) expect(node.online).toBe(false);
    const backsBefore = await powerBackRunIds();
    const confirmed = Object.values(targets);

    // The confirmation is the server's: missing → 400 naming it; another list → 409 naming it.
    const missing = await post(admin, drillRunId, { live: true });
    expect(missing.status).toBe(400);
    expect(
      ((await missing.json()) as { fieldErrors: Record<string, string[]> }).fieldErrors,
    ).toHaveProperty("confirmedTargetIds");
    const wrong = await post(admin, drillRunId, {
      live: true,
      confirmedTargetIds: confirmed.slice(1),
    });
    expect(wrong.status).toBe(409);
    const wrongBody = (await wrong.json()) as {
      error: string;
      fieldErrors: Record<string, string[]>;
    };
    expect(wrongBody.error).toMatch(/now powers on/);
    expect(wrongBody.fieldErrors).toHaveProperty("confirmedTargetIds");
    expect(await powerBackRunIds()).toEqual(backsBefore);

    // The policy holds for the drill's UPS (mains, charge, runtime), yet the monitor starts no
    // way back: a drill is no outage.
    await persistOnMains(db, upsId, {
      mainsMs: 3_600_000,
      chargePercent: 100,
      runtimeSeconds: 36_000,
      rawStatus: "OL",
    });
    await watchPowerBack(db, new Date(), () => {});
    expect(await outageToBringBack(db, new Date())).toBe(null);
    expect(await powerBackRunIds()).toEqual(backsBefore);

    // Disarmed: a live way back is refused, with what to do, and nothing starts.
    await setMode("dry-run");
    expect((await drillWayBack(db, drillRunId)).live).toEqual({
      offered: false,
      why: expect.stringMatching(/arm first/),
    });
    const unarmed = await post(admin, drillRunId, { live: true, confirmedTargetIds: confirmed });
    expect(unarmed.status).toBe(409);
    expect(((await unarmed.json()) as { error: string }).error).toMatch(/arm first/);
    expect(await powerBackRunIds()).toEqual(backsBefore);
    expect(poweredOn).toEqual([]);

    await setMode("armed");
    try {
      expect((await drillWayBack(db, drillRunId)).live).toEqual({ offered: true });
      const { runId } = await startDrillWayBack(
        db,
        { runId: drillRunId, live: true, confirmedTargetIds: confirmed },
        ADMIN,
      );
      const run = await settled(db, runId, 180_000);
      expect(run.status, run.failureReason ?? "").toBe("succeeded");
      // Monitors first (pve3 went down last, then pve2), then pve1; every node back.
      expect(poweredOn).toEqual(["pve3", "pve2", "pve1"]);
      for (const node of lab.model.nodes) expect(node.online).toBe(true);
      expect(lab.model.ceph!.flags.size).toBe(0);
      expect(lab.model.armedState).toBe("armed");
      // Exactly the drill's guests, once each; 121 stays stopped.
      expect(runningGuests()).toEqual([101, 102, 111, 122]);
      const started = lab.model.guestStarts.map((s) => s.vmid);
      expect([...started].sort((a, b) => a - b)).toEqual([101, 102, 111, 122]);
      expect(started.indexOf(102)).toBeLessThan(started.indexOf(101));
      expect(started.indexOf(101)).toBeLessThan(started.indexOf(122));
      const events = await eventsOf(runId);
      expect(events.map((e) => e.kind)).toEqual(["power_back.started", "power_back.done"]);
      expect(events.at(-1)!.message).toMatch(
        /^Drill: way back done: 3 of 3 host\(s\) powered on, 4 of 4 guest\(s\) running again/,
      );
      const view = (await powerBackRunView(db, runId))!;
      expect(view.verdict).toEqual({
        tone: "ok",
        text: "drill — 3 of 3 hosts back, 4 of 4 guests running",
      });
      expect(view.origin).toMatchObject({ kind: "drill-way-back", live: true });
      // Still no outage to come back from.
      expect(await outageToBringBack(db, new Date())).toBe(null);
    } finally {
      await setMode("dry-run");
    }
  }, 400_000);

  it("answers input it cannot read with 400 naming the field, a run that is no drill with 404, and starts nothing", async () => {
    const before = await powerBackRunIds();
    const notAnId = await post(admin, "not-a-uuid", { live: false });
    expect(notAnId.status).toBe(400);
    expect(
      ((await notAnId.json()) as { fieldErrors: Record<string, string[]> }).fieldErrors,
    ).toHaveProperty("runId");
    const unknownRun = "00000000-0000-4000-8000-000000000000";
    for (const body of [{}, { live: "yes" }, { live: true, confirmedTargetIds: ["x"] }]) {
      const response = await post(admin, unknownRun, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    const get = await wayBackRoute.GET(
      new Request(`http://test/api/power/drills/${unknownRun}/way-back`, {
        headers: operator.authHeaders(),
      }),
      routeParams({ runId: unknownRun }),
    );
    expect(get.status).toBe(404);
    expect((await post(admin, unknownRun, { live: false })).status).toBe(404);
    expect(await powerBackRunIds()).toEqual(before);
  });
});
