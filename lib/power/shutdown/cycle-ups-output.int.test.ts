import { and, asc, eq, like } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { feedFromLabUps, type LabUpsFeed } from "@/lab/ups/output-feed";
import { powerEvents } from "@/lib/db/schema";
import { createUpsDevice } from "@/lib/power/operations/ups-devices";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { actionsOfRun } from "@/lib/power/records/run-actions";
import { registerTestDatabase } from "@/test/db";
import {
  ADMIN,
  nutSourceOf,
  onboardedLabNode,
  persistReading,
  snmpSourceOf,
  powerTestPipelines,
  protectHost,
  shutdownInput,
} from "@/test/fixtures/power";
import { hostRow, runLogText, settled } from "@/test/runs";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { startDrill } from "../drill/start-drill";
import { startShutdownRun } from "../shutdown-pipeline/start-shutdown-run";

/*
 * Issue 30, item 8: the optional UPS output cycle, through the real worker, real lab nodes
 * (their APIs go down and come back) and lab UPSes speaking NUT's protocol (the lab's NUT face
 * answers as Debian's upsd: lab/ups/nut-parity.int.test.ts).
 *
 * pve-boots has its BIOS set to power on after AC loss, pve-stays has not. Both are fed by every
 * UPS device below (in the lab: rack1's output feeds them); pve-other only by ups-shared, and
 * it is never shut down here.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let boots: LabNode;
let stays: LabNode;
let other: LabNode;
const target: Record<"boots" | "stays" | "other", string> = {} as never;
/** Grants shutdown.return (as docs/power.md tells an admin to set up upsd.users). */
let labUps: LabUps;
/** Its console user has no `instcmds`. */
let deniedUps: LabUps;
/** Its driver offers no shutdown.return. */
let noCommandUps: LabUps;
/** Read over SNMP only. */
let snmpUps: LabUps;
let feed: LabUpsFeed;
/** The console's name for pve-other's host. */
let otherHostName: string;
const ups: Record<"cycling" | "off" | "denied" | "noCommand" | "snmp" | "shared", string> =
  {} as never;

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
  // 1 nominal s = 20 ms: ups.delay.shutdown 20 s → 0.4 s, ups.delay.start 30 s → 0.6 s.
  // A battery that lasts (100 000 nominal s): the test is about the cycle, not a UPS running dry.
  const upsOptions = { timeScale: 0.02, drainSeconds: 100_000, snmp: false as const };
  [labUps, deniedUps, noCommandUps, snmpUps] = await Promise.all([
    startLabUps({ ...upsOptions, name: "rack1" }),
    startLabUps({ ...upsOptions, name: "rack2", nut: { instcmds: [] } }),
    startLabUps({ ...upsOptions, name: "rack3", nut: { commands: ["load.off"] } }),
    startLabUps({ ...upsOptions, name: "rack4", nut: false, snmp: { v3: false } }),
  ]);
  const device = async (name: string, lab: LabUps, outputCycle: boolean) =>
    (
      await createUpsDevice(
        db,
        { name, source: nutSourceOf(lab), ...(outputCycle ? { outputCycle } : {}) },
        ADMIN,
      )
    ).id;
  ups.cycling = await device("ups-cycling", labUps, true);
  // Left at its default: the setting is off unless an admin turns it on.
  ups.off = await device("ups-off", labUps, false);
  ups.denied = await device("ups-denied", deniedUps, true);
  ups.noCommand = await device("ups-no-command", noCommandUps, true);
  ups.snmp = (
    await createUpsDevice(
      db,
      { name: "ups-snmp", source: snmpSourceOf(snmpUps), outputCycle: true },
      ADMIN,
    )
  ).id;
  ups.shared = await device("ups-shared", labUps, true);

  const started = {
    boots: await onboardedLabNode(db, "pve-boots"),
    stays: await onboardedLabNode(db, "pve-stays"),
    other: await onboardedLabNode(db, "pve-other"),
  };
  ({ boots, stays, other } = {
    boots: started.boots.node,
    stays: started.stays.node,
    other: started.other.node,
  });
  boots.bios.powerOnAfterAcLoss = true;
  const everyUps = [ups.cycling, ups.off, ups.denied, ups.noCommand, ups.snmp, ups.shared];
  target.boots = await protectHost(db, started.boots.hostId, { feeds: everyUps });
  target.stays = await protectHost(db, started.stays.hostId, { feeds: everyUps });
  target.other = await protectHost(db, started.other.hostId, { feeds: [ups.shared] });
  otherHostName = (await hostRow(db, started.other.hostId)).name;
  // What rack1's sockets power in the lab: the two hosts every UPS device here feeds.
  feed = feedFromLabUps(labUps, [boots, stays]);
  await updatePowerSettings(db, { shutdown: SHUTDOWN_BOUNDS }, ADMIN);
  for (const id of Object.values(ups)) await persistReading(db, id, true);
  for (const lab of [labUps, deniedUps, noCommandUps, snmpUps]) lab.control.pullPlug();
}, 180_000);

afterAll(async () => {
  feed?.stop();
  await worker?.stop();
  await Promise.all([boots, stays, other].map((node) => node?.stop()));
  await Promise.all([labUps, deniedUps, noCommandUps, snmpUps].map((lab) => lab?.stop()));
});

/**
 * Bounds no lab node misses on a loaded machine: a call unanswered after 2 s was settled failed
 * and a node slow to go down failed the run — neither is what these tests are about.
 */
const SHUTDOWN_BOUNDS = { callTimeoutSeconds: 10, targetDownSeconds: 60 };

async function shutdown(upsId: string, targets: string[]) {
  const { db } = database;
  const runId = await db.transaction((tx) => startShutdownRun(tx, shutdownInput(upsId, targets)));
  return settled(db, runId, 120_000);
}

async function cycleEvents(runId: string) {
  return database.db
    .select()
    .from(powerEvents)
    .where(and(eq(powerEvents.runId, runId), like(powerEvents.kind, "ups_cycle.%")))
    .orderBy(asc(powerEvents.id));
}

async function cycleActions(runId: string) {
  return (await actionsOfRun(database.db, runId)).filter((a) =>
    a.label.startsWith("cycle output "),
  );
}

const instantCommands = (lab: LabUps) =>
  lab.nutCommands.filter((c) => /^(INSTCMD|LIST CMD)\b/.test(c.line)).map((c) => c.line);

async function powerOnBothAgain() {
  await Promise.all([boots.power.powerOn(), stays.power.powerOn()]);
  expect([boots.power.state, stays.power.state]).toEqual(["up", "up"]);
}

async function armForAll() {
  await setPowerMode(
    database.db,
    { mode: "armed", confirmedTargetIds: Object.values(target) },
    ADMIN,
  );
}

describe("the UPS output cycle after a shutdown", () => {
  it("in dry-run records 'would ask ups-cycling to cycle its output' and sends nothing", async () => {
    const run = await shutdown(ups.cycling, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    const [action] = await cycleActions(run.id);
    expect(action).toMatchObject({
      lane: "ups-cycling",
      outcome: "would-do",
      request: `INSTCMD rack1 shutdown.return to NUT rack1@127.0.0.1:${labUps.nut!.port}`,
      detail: "dry-run: nothing sent",
    });
    const events = await cycleEvents(run.id);
    expect(events.map((e) => e.kind)).toEqual(["ups_cycle.would_send"]);
    expect(events[0]!.message).toContain("would ask ups-cycling to cycle its output");
    // Nothing reached the UPS: not even its command list was asked for.
    expect(instantCommands(labUps)).toEqual([]);
    expect(labUps.control.outputEvents).toEqual([]);
    expect([boots.power.state, stays.power.state]).toEqual(["up", "up"]);
  });

  it("armed but the setting left at its default (off): every target goes down, nothing is asked of the UPS", async () => {
    await armForAll();
    const run = await shutdown(ups.off, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    expect([boots.power.state, stays.power.state]).toEqual(["down", "down"]);
    expect(await cycleActions(run.id)).toEqual([]);
    expect(await cycleEvents(run.id)).toEqual([]);
    expect(instantCommands(labUps)).toEqual([]);
    expect(await runLogText(database.db, run.id)).toContain(
      "output cycle of ups-off: off (the UPS's setting); nothing sent",
    );
    await powerOnBothAgain();
  });

  it("armed, but a host on the UPS was not shut down and still answers: never sent, the reason recorded", async () => {
    const run = await shutdown(ups.shared, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    expect([boots.power.state, stays.power.state]).toEqual(["down", "down"]);
    expect(other.power.state).toBe("up");
    const [action] = await cycleActions(run.id);
    expect(action).toMatchObject({
      lane: "ups-shared",
      outcome: "failed",
      detail: `not sent: ${otherHostName} is fed by ups-shared but not shut down by this run`,
    });
    const events = await cycleEvents(run.id);
    expect(events.map((e) => [e.kind, e.severity])).toEqual([["ups_cycle.refused", "warning"]]);
    expect(instantCommands(labUps)).toEqual([]);
    expect(labUps.control.outputOn).toBe(true);
    await powerOnBothAgain();
  });

  it("armed, the UPS's user lacks instcmds: upsd's ACCESS-DENIED is a clear failure, the output stays on", async () => {
    const run = await shutdown(ups.denied, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    const [action] = await cycleActions(run.id);
    expect(action!.outcome).toBe("failed");
    expect(action!.detail).toContain(
      "refused INSTCMD shutdown.return for UPS rack2 (ERR ACCESS-DENIED)",
    );
    expect(action!.detail).toContain('"instcmds = shutdown.return" in upsd.users');
    const events = await cycleEvents(run.id);
    expect(events.map((e) => [e.kind, e.severity])).toEqual([["ups_cycle.failed", "critical"]]);
    expect(events[0]!.data).toMatchObject({ code: "ACCESS-DENIED" });
    // The command reached upsd (which refused it); the lab UPS took nothing.
    expect(instantCommands(deniedUps)).toEqual(["LIST CMD rack2", "INSTCMD rack2 shutdown.return"]);
    expect(deniedUps.control.outputEvents).toEqual([]);
    await powerOnBothAgain();
  });

  it("armed, the UPS's driver does not offer shutdown.return: reported from LIST CMD, INSTCMD never sent", async () => {
    const run = await shutdown(ups.noCommand, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    const [action] = await cycleActions(run.id);
    expect(action!.outcome).toBe("failed");
    expect(action!.detail).toContain(
      "UPS rack3 does not offer shutdown.return (LIST CMD lists load.off)",
    );
    expect(instantCommands(noCommandUps)).toEqual(["LIST CMD rack3"]);
    expect(noCommandUps.control.outputEvents).toEqual([]);
    await powerOnBothAgain();
  });

  it("a live drill (armed) shuts the targets down for real but never asks the UPS: 'a drill never sends it'", async () => {
    const { db } = database;
    const drill = await startDrill(
      db,
      { upsId: ups.cycling, live: true, confirmedTargetIds: [target.boots, target.stays] },
      ADMIN,
    );
    const run = await settled(db, drill.runId, 120_000);
    expect(run.status).toBe("succeeded");
    expect([boots.power.state, stays.power.state]).toEqual(["down", "down"]);
    const [action] = await cycleActions(run.id);
    expect(action).toMatchObject({ outcome: "would-do", detail: "a drill never sends it" });
    expect(instantCommands(labUps)).toEqual([]);
    expect(labUps.control.outputEvents).toEqual([]);
    await powerOnBothAgain();
  });

  it("armed, a UPS read over SNMP: 'not possible with this source', nothing sent to its agent", async () => {
    const requestsBefore = snmpUps.snmpRequests;
    const run = await shutdown(ups.snmp, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    const [action] = await cycleActions(run.id);
    expect(action!.outcome).toBe("failed");
    expect(action!.detail).toMatch(
      /^not sent: not possible with this source: ups-snmp is read over SNMP v2c with read access only/,
    );
    expect((await cycleEvents(run.id)).map((e) => e.kind)).toEqual(["ups_cycle.refused"]);
    expect(snmpUps.snmpRequests).toBe(requestsBefore);
    await powerOnBothAgain();
  });

  it("armed, a target keeps answering (its shutdown refused): the run fails at VerifyTargetsDown and the UPS is never asked", async () => {
    const { db } = database;
    await updatePowerSettings(
      db,
      { shutdown: { callTimeoutSeconds: 10, targetDownSeconds: 10 } },
      ADMIN,
    );
    stays.api.faults.statusPostFailures = 1000;
    try {
      const run = await shutdown(ups.cycling, [target.boots, target.stays]);
      expect(run.status).toBe("failed");
      expect(run.failedStep).toBe("VerifyTargetsDown");
      expect(stays.power.state).toBe("up");
      expect(await cycleActions(run.id)).toEqual([]);
      const stillUp = await db
        .select()
        .from(powerEvents)
        .where(and(eq(powerEvents.runId, run.id), eq(powerEvents.kind, "target.still_up")))
        .orderBy(asc(powerEvents.id));
      expect(stillUp).toHaveLength(1);
      expect(instantCommands(labUps)).toEqual([]);
    } finally {
      stays.api.faults.statusPostFailures = 0;
      await updatePowerSettings(db, { shutdown: SHUTDOWN_BOUNDS }, ADMIN);
    }
    await powerOnBothAgain();
  }, 60_000);

  it("armed, every target seen down, still on battery: INSTCMD reaches the UPS, its output cycles, and the host set to power on after AC loss comes back when mains returns", async () => {
    const run = await shutdown(ups.cycling, [target.boots, target.stays]);
    expect(run.status).toBe("succeeded");
    expect([boots.power.state, stays.power.state]).toEqual(["down", "down"]);
    expect(instantCommands(labUps)).toEqual(["LIST CMD rack1", "INSTCMD rack1 shutdown.return"]);

    const [action] = await cycleActions(run.id);
    expect(action).toMatchObject({ lane: "ups-cycling", outcome: "ok" });
    expect(action!.detail).toBe(
      "upsd answered OK: the UPS turns its output off 20 s after the command (ups.delay.shutdown) and on again when mains returns (after ups.delay.start, 30 s)",
    );
    const events = await cycleEvents(run.id);
    expect(events.map((e) => e.kind)).toEqual(["ups_cycle.sent"]);
    const log = await runLogText(database.db, run.id);
    expect(log).toContain("> PASSWORD ********");
    expect(log).not.toContain(labUps.nut!.password);

    // The UPS keeps its delay, then its output goes off.
    await waitUntil(() => !labUps.control.outputOn, {
      timeoutMs: 20_000,
      what: "the lab UPS to turn its output off",
    });
    await feed.settled();
    expect(boots.power.state).toBe("down");

    // On battery the output stays off; mains back → on after ups.delay.start.
    labUps.control.restore();
    await waitUntil(() => labUps.control.outputOn, {
      timeoutMs: 20_000,
      what: "the lab UPS to turn its output on again",
    });
    await feed.settled();
    expect(boots.power.state).toBe("up");
    expect(stays.power.state).toBe("down");
    expect(labUps.control.outputEvents.map((e) => e.what)).toEqual([
      "command",
      "output-off",
      "output-on",
    ]);
    expect(feed.events.filter((e) => e.node === "pve-boots").map((e) => e.what)).toEqual([
      "lost power (already down)",
      "power back; boots (BIOS: power on after AC loss)",
      "up",
    ]);
    expect(feed.events.filter((e) => e.node === "pve-stays").map((e) => e.what)).toEqual([
      "lost power (already down)",
      "power back; stays off (BIOS: stay off after AC loss)",
    ]);
  }, 120_000);
});
