import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq } from "drizzle-orm";
import { events as hostEvents, powerBackGuests, powerEvents, runs } from "@/lib/db/schema";
import { readLogTail } from "@/lib/logs/read";
import { setPowerController } from "@/lib/power-controllers/store";
import { watchPowerBack } from "@/lib/power/monitor/power-back-watch";
import { bringBackNow } from "@/lib/power/operations/bring-back-now";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { actionsOfRun, type PowerRunAction } from "@/lib/power/records/run-actions";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import {
  OUTAGE_MAX_AGE_MS,
  outageToBringBack,
} from "@/lib/power/power-back-pipeline/start-power-back";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import { latestPowerBackRun, powerBackRunView } from "@/lib/power/queries/power-back-run";
import { previewPowerBack } from "@/lib/power/queries/power-back-preview";
import { listPowerRuns } from "@/lib/power/queries/timeline";
import { startLabCluster, type LabCluster } from "@/lab";
import {
  clusterNodePower,
  startLabPowerControllers,
  type LabPowerControllers,
} from "@/lab/power-controllers";
import type { LabGuestSpec } from "@/lab/pve/cluster/model";
import { setNodeConfig } from "@/lab/pve/cluster/node-config";
import { registerTestDatabase } from "@/test/db";
import {
  ADMIN,
  persistOnMains,
  persistReading,
  powerTestPipelines,
  shutdownInput,
  setModeConfirmingAll,
} from "@/test/fixtures/power";
import { protectLabCluster, startClusterTestWorker } from "@/test/fixtures/protected-lab-cluster";
import { settled } from "@/test/runs";
import { getRun } from "@/lib/runs/get-run";
import type { WorkerHandle } from "@/worker/runner";
import { hostsOfTargets, labRedfish } from "@/test/fixtures/lab-bmc";

/**
 * The way back (issue 30, items 3-6) through the real worker against lab clusters over real
 * HTTPS, each node with a Redfish BMC (the lab's, over TLS) that switches its real lab power:
 * three nodes, Ceph monitors on pve2 and pve3, guests with startup orders and one the operator
 * had stopped. An armed outage takes the cluster down; then the way back.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
const labs: LabCluster[] = [];
const bmcs: LabPowerControllers[] = [];

/** Running guests with startup orders (order 1: 102 and 112, order 2: 101, order 3: 122, none: 111); 121 stopped. */
function guests(): LabGuestSpec[] {
  return [
    { vmid: 101, type: "qemu", node: "pve1", storage: "ceph", ha: true, startup: "order=2,up=1" },
    { vmid: 102, type: "lxc", node: "pve1", storage: "ceph", startup: "order=1" },
    { vmid: 111, type: "qemu", node: "pve2", storage: "local" },
    { vmid: 112, type: "qemu", node: "pve2", storage: "ceph", startup: "1,up=1" },
    { vmid: 121, type: "qemu", node: "pve3", storage: "local", status: "stopped" },
    { vmid: 122, type: "lxc", node: "pve3", storage: "local", startup: "order=3" },
  ];
}

type Setup = {
  lab: LabCluster;
  bmc: LabPowerControllers;
  upsId: string;
  targets: Record<string, string>;
  /** Node names in the order their power came back. */
  poweredOn: string[];
};

let counter = 0;

async function outageOfLabCluster(
  options: { wrongPassword?: string; pveWol?: string[] } = {},
): Promise<Setup> {
  const { db } = database;
  const lab = await startLabCluster({
    nodes: 3,
    name: `back-${++counter}`,
    guests: guests(),
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
  labs.push(lab);
  const poweredOn: string[] = [];
  const bmc = await startLabPowerControllers({
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
  bmcs.push(bmc);
  const { upsId, targets } = await protectLabCluster(db, lab);
  const hostIds = await hostsOfTargets(db, targets);
  // Wake-on-LAN through the cluster: every node's MAC in its Proxmox config, the packets of
  // each member to the lab's listener on loopback.
  lab.model.wakeOnLanPort = bmc.nodes[0]!.wol.port;
  for (const n of lab.nodes)
    setNodeConfig(
      lab.nodes[0]!.root,
      n.name,
      "wakeonlan",
      `mac=${bmc.node(n.name).wol.mac},broadcast-address=127.0.0.1`,
    );
  for (const [node, hostId] of Object.entries(hostIds)) {
    const controller = options.pveWol?.includes(node)
      ? ({ kind: "pve-wol" } as const)
      : labRedfish(
          bmc,
          node,
          node === options.wrongPassword ? { password: "not-the-password" } : {},
        );
    await setPowerController(db, { hostId, actor: "test", controller });
  }
  return { lab, bmc, upsId, targets, poweredOn };
}

async function setMode(mode: "armed" | "dry-run") {
  await setModeConfirmingAll(database.db, mode);
}

/** The outage: the shutdown run of the cluster's UPS, to its end. */
async function shutDown(setup: Setup) {
  const { db } = database;
  await persistReading(db, setup.upsId, true);
  const runId = await db.transaction((tx) =>
    startShutdownRun(tx, shutdownInput(setup.upsId, Object.values(setup.targets))),
  );
  const run = await settled(db, runId, 120_000);
  expect(run.status, run.failureReason ?? "").toBe("succeeded");
  return runId;
}

async function powerBackRuns() {
  return database.db
    .select({ id: runs.id })
    .from(runs)
    .where(eq(runs.pipeline, POWER_BACK))
    .orderBy(asc(runs.createdAt), asc(runs.id));
}

async function finished(runId: string) {
  const { db } = database;
  const run = await settled(db, runId, 120_000);
  const actions = await actionsOfRun(db, runId);
  const log = (await readLogTail(db, runId, 500)).map((l) => l.text).join("\n");
  const events = await db
    .select()
    .from(powerEvents)
    .where(eq(powerEvents.runId, runId))
    .orderBy(asc(powerEvents.id));
  return { run, actions, log, events };
}

const labels = (actions: PowerRunAction[], pattern: RegExp) =>
  actions.filter((a) => pattern.test(a.label)).map((a) => [a.label, a.outcome]);

const running = (lab: LabCluster) =>
  [...lab.model.guests.values()]
    .filter((g) => g.status === "running")
    .map((g) => g.vmid)
    .sort((a, b) => a - b);

beforeAll(async () => {
  worker = await startClusterTestWorker(database, null);
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  for (const bmc of bmcs) await bmc.stop();
  for (const lab of labs) await lab.stop();
});

describe("the way back after an outage", () => {
  it("records what ran before, then — once the policy holds — powers the nodes on by their controllers (monitors first), waits for quorum, clears the flags, re-arms HA and starts exactly the guests that ran, in their startup order", async () => {
    const { db } = database;
    const setup = await outageOfLabCluster();
    const { lab } = setup;
    await setMode("armed");
    await updatePowerSettings(
      db,
      { powerBack: { mainsStableMinutes: 1, minChargePercent: 50 } },
      ADMIN,
    );
    const shutdownRunId = await shutDown(setup);
    for (const node of lab.model.nodes) expect(node.online).toBe(false);
    expect(lab.model.ceph!.flags.size).toBeGreaterThan(0);
    expect(lab.model.armedState).toBe("disarmed");

    // Item 3: the guests that ran, with their order and up-delay and HA; never 121 (stopped).
    const recorded = await db
      .select()
      .from(powerBackGuests)
      .where(eq(powerBackGuests.runId, shutdownRunId))
      .orderBy(asc(powerBackGuests.vmid));
    expect(
      recorded.map((g) => [g.vmid, g.node, g.state, g.startupOrder, g.upSeconds, g.haManaged]),
    ).toEqual([
      [101, "pve1", "running", 2, 1, true],
      [102, "pve1", "running", 1, null, false],
      [111, "pve2", "running", null, null, false],
      [112, "pve2", "running", 1, 1, false],
      [122, "pve3", "running", 3, null, false],
    ]);

    // The policy, decided by the monitor's own function with its clock: mains short of N
    // minutes, or runtime short of the shutdown's budget, starts nothing.
    const outage = (await outageToBringBack(db, new Date()))!;
    expect(outage.shutdownRunIds).toEqual([shutdownRunId]);
    // A week later the outage is no longer one to come back from (the clock is the caller's).
    expect(await outageToBringBack(db, new Date(Date.now() + OUTAGE_MAX_AGE_MS + 60_000))).toBe(
      null,
    );
    const log: string[] = [];
    await persistOnMains(db, setup.upsId, {
      mainsMs: 59_000,
      chargePercent: 80,
      runtimeSeconds: outage.budgetSeconds + 60,
      rawStatus: "OL CHRG",
    });
    await watchPowerBack(db, new Date(), (line) => log.push(line));
    await persistOnMains(db, setup.upsId, {
      mainsMs: 60_000,
      chargePercent: 80,
      runtimeSeconds: outage.budgetSeconds - 1,
      rawStatus: "OL CHRG",
    });
    await watchPowerBack(db, new Date(), (line) => log.push(line));
    expect(await powerBackRuns()).toEqual([]);
    expect(setup.poweredOn).toEqual([]);

    // Mains on for N minutes, charged, runtime for the shutdown again: the way back starts once.
    await persistOnMains(db, setup.upsId, {
      mainsMs: 60_000,
      chargePercent: 80,
      runtimeSeconds: outage.budgetSeconds + 60,
      rawStatus: "OL CHRG",
    });
    await watchPowerBack(db, new Date(), (line) => log.push(line));
    await watchPowerBack(db, new Date(), (line) => log.push(line));
    const started = await powerBackRuns();
    expect(started).toHaveLength(1);
    const { run, actions, log: runLog, events } = await finished(started[0]!.id);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");

    // Monitors first (pve3 went down last, then pve2), then the rest; every node back, quorate.
    expect(setup.poweredOn).toEqual(["pve3", "pve2", "pve1"]);
    expect(labels(actions, /^power on/)).toEqual([
      ["power on pve3", "ok"],
      ["power on pve2", "ok"],
      ["power on pve1", "ok"],
    ]);
    for (const node of lab.model.nodes) expect(node.online).toBe(true);
    expect(lab.model.quorate).toBe(true);
    expect(labels(actions, /^quorum of/)).toEqual([[expect.stringMatching(/^quorum of /), "ok"]]);

    // Flags this outage set cleared and HA re-armed, each read back — flags before HA.
    expect(lab.model.ceph!.flags.size).toBe(0);
    expect(lab.model.armedState).toBe("armed");
    expect(labels(actions, /Ceph flags|HA/)).toEqual([
      ["clear Ceph flags", "ok"],
      ["re-arm HA", "ok"],
    ]);

    // Exactly the guests that ran before run again — 121 stays stopped — in their order.
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
    const starts = lab.model.guestStarts.map((s) => s.vmid);
    expect(starts).toHaveLength(5);
    expect(new Set(starts.slice(0, 2))).toEqual(new Set([102, 112]));
    expect(starts.slice(2)).toEqual([101, 122, 111]);
    expect(labels(actions, /^start /).map(([, outcome]) => outcome)).toEqual(Array(5).fill("ok"));
    // Every step said what it waited for, and the way back notified.
    expect(runLog).toContain("power on 1:");
    expect(runLog).toMatch(/StartGuests \(each up to \d+ s to read running\): waiting for /);
    expect(events.map((e) => e.kind)).toEqual(["power_back.started", "power_back.done"]);
    expect(events.at(-1)!.message).toContain("3 of 3 host(s) powered on, 5 of 5 guest(s)");
    expect(log.some((line) => line.includes(`power-back run ${started[0]!.id} started`))).toBe(
      true,
    );
    // Item 9: the card's one line, from what the run recorded; green only with all of it back.
    const view = (await powerBackRunView(db, started[0]!.id))!;
    expect(view.verdict).toEqual({ tone: "ok", text: "3 of 3 hosts back, 5 of 5 guests running" });
    expect(view.origin).toEqual({ kind: "way-back", by: "monitor", why: expect.any(String) });
    expect(view.steps).toEqual({});
  }, 240_000);

  it("a controller that fails is reported and the others go on; its node's guests are not started", async () => {
    const { db } = database;
    const setup = await outageOfLabCluster({ wrongPassword: "pve1" });
    const { lab } = setup;
    await setMode("armed");
    await shutDown(setup);
    await persistReading(db, setup.upsId, false);
    const { runId } = await bringBackNow(db, {}, ADMIN);
    const { run, actions, events } = await finished(runId);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(setup.poweredOn).toEqual(["pve3", "pve2"]);
    expect(labels(actions, /^power on/)).toEqual([
      ["power on pve3", "ok"],
      ["power on pve2", "ok"],
      ["power on pve1", "failed"],
    ]);
    expect(lab.model.node("pve1")!.online).toBe(false);
    const failed = events.filter((e) => e.kind === "power_back.host_failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.message).toMatch(/not powered on/);
    // The guests of the nodes that came back run again; pve1's are reported, not started.
    expect(running(lab)).toEqual([111, 112, 122]);
    expect(labels(actions, /^start (qemu|lxc) 10/)).toEqual([
      ["start lxc 102", "failed"],
      ["start qemu 101", "failed"],
    ]);
    expect(events.at(-1)!.kind).toBe("power_back.done");
    expect(events.at(-1)!.severity).toBe("warning");
    // The card names the host whose controller refused and what to do, never green.
    const view = (await powerBackRunView(db, runId))!;
    expect(view.verdict.tone).toBe("failed");
    expect(view.verdict.text).toMatch(
      /^failed: \S+ was not powered on: .+ refused .+ — power it on by hand; /,
    );
    expect(view.verdict.text).toContain("2 of 3 hosts back, 3 of 5 guests running");
    expect(view.verdict.text).toContain("guests 101, 102 not started");
  }, 240_000);

  it("mains lost again halfway: the way back stops at once and nothing more is powered on", async () => {
    const { db } = database;
    const setup = await outageOfLabCluster();
    const { lab, bmc } = setup;
    await setMode("armed");
    await shutDown(setup);
    await persistReading(db, setup.upsId, false);
    // The moment pve3's BMC takes its power-on, the UPS reads on battery again.
    bmc.node("pve3").chassis.afterPowerOnTaken = () => persistReading(db, setup.upsId, true);
    const { runId } = await bringBackNow(db, {}, ADMIN);
    const { run, actions, log, events } = await finished(runId);
    expect(run.status).toBe("failed");
    expect(run.failureReason).toMatch(/mains lost again/);
    expect(setup.poweredOn).toEqual(["pve3"]);
    expect(bmc.node("pve2").chassis.powerOnRequests).toEqual([]);
    expect(bmc.node("pve1").chassis.powerOnRequests).toEqual([]);
    expect(labels(actions, /^power on/)).toEqual([["power on pve3", "ok"]]);
    expect(lab.model.guestStarts).toEqual([]);
    expect(log).toContain("mains lost again");
    expect(events.map((e) => [e.kind, e.severity])).toEqual([
      ["power_back.started", "warning"],
      ["power_back.failed", "critical"],
    ]);
    expect(events.at(-1)!.message).toContain("a new outage stopped it");
    expect((await powerBackRunView(db, runId))!.verdict).toEqual({
      tone: "stopped",
      text: expect.stringMatching(
        /^stopped: mains lost again on .+ — 0 of 3 hosts back, 0 of 5 guests running; nothing more is powered on or started$/,
      ),
    });

    // That outage over, the next way back covers it: pve3 is on already (nothing sent to it),
    // the others come back.
    bmc.node("pve3").chassis.afterPowerOnTaken = null;
    await persistReading(db, setup.upsId, false);
    const again = await finished((await bringBackNow(db, {}, ADMIN)).runId);
    expect(again.run.status, again.run.failureReason ?? "").toBe("succeeded");
    expect(setup.poweredOn).toEqual(["pve3", "pve2", "pve1"]);
    expect(bmc.node("pve3").chassis.powerOnRequests).toHaveLength(1);
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
  }, 240_000);

  it("mains lost again halfway: the hosts already back are targets again — the new outage's shutdown takes them down, the ones still off count as down", async () => {
    const { db } = database;
    const setup = await outageOfLabCluster();
    const { lab, bmc } = setup;
    await setMode("armed");
    await shutDown(setup);
    await persistReading(db, setup.upsId, false);
    bmc.node("pve3").chassis.afterPowerOnTaken = () => persistReading(db, setup.upsId, true);
    const stopped = await finished((await bringBackNow(db, {}, ADMIN)).runId);
    expect(stopped.run.status).toBe("failed");
    expect(lab.model.node("pve3")?.online).toBe(true);

    const again = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(setup.upsId, Object.values(setup.targets))),
    );
    const run = await settled(db, again, 120_000);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(lab.model.node("pve3")?.online).toBe(false);

    // Mains back for good: one way back covers both outages (the tests after this one share the
    // database and find no outage of this cluster open).
    bmc.node("pve3").chassis.afterPowerOnTaken = null;
    await persistReading(db, setup.upsId, false);
    const last = await finished((await bringBackNow(db, {}, ADMIN)).runId);
    expect(last.run.status, last.run.failureReason ?? "").toBe("succeeded");
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
  }, 240_000);

  it("Wake-on-LAN through the cluster: the node waits until a member it came back with answers, which sends Proxmox's wakeonlan for it", async () => {
    const { db } = database;
    const setup = await outageOfLabCluster({ pveWol: ["pve1"] });
    const { lab, bmc } = setup;
    await setMode("armed");
    await shutDown(setup);
    for (const node of lab.model.nodes) expect(node.online).toBe(false);
    // The monitors boot slowly: when pve1's turn comes, no member answers yet.
    bmc.node("pve3").chassis.faults.bootMs = 1500;
    bmc.node("pve2").chassis.faults.bootMs = 1500;
    await persistReading(db, setup.upsId, false);
    const { runId } = await bringBackNow(db, {}, ADMIN);
    const { run, actions, log } = await finished(runId);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    expect(setup.poweredOn).toEqual(["pve3", "pve2", "pve1"]);
    expect(bmc.node("pve1").chassis.powerOnRequests).toEqual(["wake-on-lan"]);
    expect(log).toMatch(
      /waiting for a member of the cluster to answer its API, to wake pve1\S* through it/,
    );
    const wake = actions.find((a) => a.label === "power on pve1")!;
    expect(wake.outcome).toBe("ok");
    expect(wake.detail).toMatch(/magic packet for pve1\S* went out .*through its cluster/);
    const events = await db
      .select()
      .from(hostEvents)
      .where(eq(hostEvents.kind, "host.power_on"))
      .orderBy(asc(hostEvents.id));
    expect(events.at(-1)!.message).toMatch(
      /^power on of .*: pve[23] sent the magic packet for pve1/,
    );
    for (const node of lab.model.nodes) expect(node.online).toBe(true);
    expect(running(lab)).toEqual([101, 102, 111, 112, 122]);
  }, 240_000);

  it("dry-run: every power-on and start is recorded as would-do, nothing is sent to any controller or node", async () => {
    const { db } = database;
    const setup = await outageOfLabCluster();
    const { lab, bmc } = setup;
    await setMode("dry-run");
    const shutdownRunId = await shutDown(setup);
    // Dry-run records what ran before too (reads only): what the rehearsal starts.
    const recorded = await db
      .select({ vmid: powerBackGuests.vmid, mode: powerBackGuests.mode })
      .from(powerBackGuests)
      .where(and(eq(powerBackGuests.runId, shutdownRunId), eq(powerBackGuests.state, "running")))
      .orderBy(asc(powerBackGuests.vmid));
    expect(recorded.map((g) => g.vmid)).toEqual([101, 102, 111, 112, 122]);
    expect(recorded.every((g) => g.mode === "dry-run")).toBe(true);

    await persistReading(db, setup.upsId, false);
    // What Bring back now's dialog says it will do: the plan the run freezes, with each host's
    // stored controller (monitors first), the cluster's flags and HA, the guests.
    expect(await previewPowerBack(db)).toEqual({
      mode: "dry-run",
      hosts: [
        { name: expect.stringMatching(/^pve3/), controller: "redfish" },
        { name: expect.stringMatching(/^pve2/), controller: "redfish" },
        { name: expect.stringMatching(/^pve1/), controller: "redfish" },
      ],
      guests: 5,
      clusters: [{ name: expect.any(String), cephFlags: expect.any(Array), haDisarmed: true }],
    });
    // Until it is brought back, the power page shows no way back for this outage.
    expect(await latestPowerBackRun(db)).toBe(null);
    const before = lab.nodes.map((n) => n.api.requests.length);
    const { runId } = await bringBackNow(db, {}, ADMIN);
    const { run, actions, events } = await finished(runId);
    expect(run.status, run.failureReason ?? "").toBe("succeeded");
    for (const node of bmc.nodes) expect(node.chassis.powerOnRequests).toEqual([]);
    const sent = lab.nodes.flatMap((n, i) =>
      n.api.requests.slice(before[i]).filter((r) => r.method !== "GET"),
    );
    expect(sent).toEqual([]);
    expect(lab.model.guestStarts).toEqual([]);
    expect(labels(actions, /^power on/)).toEqual([
      ["power on pve3", "would-do"],
      ["power on pve2", "would-do"],
      ["power on pve1", "would-do"],
    ]);
    expect(labels(actions, /^start /).map(([, outcome]) => outcome)).toEqual(
      Array(5).fill("would-do"),
    );
    const steps = await stepDetails(runId);
    expect(steps.WaitForNodes).toMatch(/^skipped — dry-run/);
    expect(events.map((e) => e.kind)).toEqual(["power_back.started", "power_back.done"]);
    expect(events.at(-1)!.message).toContain("nothing was sent");
    // The card and the runs list: what it would have done, and that nothing was sent.
    const view = (await powerBackRunView(db, runId))!;
    expect(view.verdict).toEqual({
      tone: "dry-run",
      text: expect.stringMatching(
        /^dry-run: would power on \S+, \S+ and \S+, clear Ceph flags and re-arm HA, start 5 guests; nothing sent$/,
      ),
    });
    expect(view.steps.WaitForNodes).toEqual({ state: "skipped", note: "skipped — dry-run" });
    expect(view.steps.PowerOnHosts?.state).toBe("dry-run");
    const listed = (await listPowerRuns(db)).runs.find((r) => r.id === runId)!;
    expect(listed.kind).toBe("way-back");
    expect(listed.verdict).toEqual(view.verdict);
    expect((await latestPowerBackRun(db))?.run.id).toBe(runId);
    // A dry-run way back that succeeded closes the outage: nothing left to bring back.
    expect(await previewPowerBack(db)).toEqual({ refused: expect.stringMatching(/^No outage/) });
  }, 240_000);
});

/** Each step's detail as the run recorded it when the step ended. */
async function stepDetails(runId: string): Promise<Record<string, string>> {
  const detail = await getRun(database.db, runId, powerTestPipelines);
  return Object.fromEntries(detail!.timeline.map((s) => [s.name, s.lastDetail ?? ""]));
}
