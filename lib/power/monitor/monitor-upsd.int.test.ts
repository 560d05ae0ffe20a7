import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentials, hosts, powerEvents, runs, upsMonitorState } from "@/lib/db/schema";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { SHUTDOWN_CANCELLED } from "@/lib/power/shutdown/shut-down-targets";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { seal } from "@/lib/secrets/seal";
import { startUpsdPeer, UPSD_PEER_USER, type UpsdPeer } from "@/lab/ups/upsd-peer";
import { registerTestDatabase } from "@/test/db";
import { addUps, ADMIN, powerTestPipelines, protectHost } from "@/test/fixtures/power";
import { settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * The monitor against a real `upsd` (Debian's nut-server, `dummy-ups` reading a `.dev` file the
 * test rewrites): on line → on battery → low battery fires; a pending shutdown is cancelled
 * when the power returns before anything was sent; upsd stopped or a stale driver is an alarm
 * and never a shutdown. Dry-run throughout: nothing here needs a real target to answer.
 */

const database = registerTestDatabase(4);
const UPS = "realups";
let peer: UpsdPeer;
let upsId: string;
let monitor: PowerMonitor;
let worker: WorkerHandle | null = null;

const vars = (status: string, charge: number, runtime: number) => ({
  "ups.status": status,
  "battery.charge": String(charge),
  "battery.runtime": String(runtime),
});

async function startPowerWorker() {
  worker = await startWorker({
    connectionString: database.url,
    pipelines: powerTestPipelines,
    concurrency: 1,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
  });
}

beforeAll(async () => {
  const { db } = database;
  peer = await startUpsdPeer({ ups: [{ name: UPS, vars: vars("OL", 100, 1800) }] });
  upsId = await addUps(db, "real-upsd", {
    type: "nut",
    host: peer.host,
    port: peer.port,
    upsName: UPS,
    ...UPSD_PEER_USER,
  });
  // A host as onboarding leaves it; in dry-run nothing is sent to it.
  const [ssh] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: seal("{}") })
    .returning();
  const [token] = await db
    .insert(credentials)
    .values({ kind: "api_token", sealed: seal("unused") })
    .returning();
  const [host] = await db
    .insert(hosts)
    .values({
      name: "pve-dry",
      address: "192.0.2.10",
      sshUser: "root",
      credentialId: ssh!.id,
      nodeName: "pve-dry",
      apiCertSha256: "AB:".repeat(31) + "AB",
      apiTokenId: "clupilot@pve!console",
      apiTokenCredentialId: token!.id,
    })
    .returning();
  await protectHost(db, host!.id, { feeds: [upsId] });
  await updatePowerSettings(db, { triggers: { latchReleaseAfterStableMainsSeconds: 3600 } }, ADMIN);
  monitor = await startPowerMonitor({
    connectionString: database.url,
    supervisorIntervalMs: 500,
    log: () => {},
  });
}, 60_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await peer?.stop();
});

const stateRow = async () =>
  (await database.db.select().from(upsMonitorState).where(eq(upsMonitorState.upsId, upsId)))[0];
const eventsOfKind = (kind: string) =>
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

describe("the power monitor against a real upsd", () => {
  it("OL → OB → OB LB: the trigger fires and a shutdown run starts", async () => {
    await waitFor(
      "on line",
      async () => (await stateRow())?.lastReading?.onBattery === false,
      15_000,
    );
    await peer.setVars(UPS, vars("OB DISCHRG", 90, 1500));
    await waitFor("on battery", async () => (await eventsOfKind("ups.on_battery"))[0], 15_000);
    expect(await eventsOfKind("trigger.fired")).toEqual([]);
    // No worker runs yet: the run waits at its first step, as behind a busy worker.
    await peer.setVars(UPS, vars("OB DISCHRG LB", 15, 200));
    const [fired] = await waitFor(
      "the trigger",
      async () => {
        const list = await eventsOfKind("trigger.fired");
        return list.length > 0 && list;
      },
      15_000,
    );
    expect(fired!.data).toMatchObject({ trigger: "low_battery" });
    expect(await powerRuns()).toHaveLength(1);
  });

  it("OB → OL before anything was sent: the pending shutdown is cancelled, and says so", async () => {
    await peer.setVars(UPS, vars("OL CHRG", 16, 220));
    await waitFor("mains back", async () => (await eventsOfKind("ups.mains_back"))[0], 15_000);
    await startPowerWorker();
    const [run] = await powerRuns();
    const done = await settled(database.db, run!.id);
    expect(done.status).toBe("failed");
    expect(done.failureReason).toBe(SHUTDOWN_CANCELLED);
    const [cancelled] = await eventsOfKind("shutdown.cancelled");
    expect(cancelled!.message).toContain(SHUTDOWN_CANCELLED);
    await releaseLatch(database.db, { upsId }, ADMIN);
  });

  it("upsd stopped: an alarm, no shutdown; it answers again when upsd is back", async () => {
    await peer.setVars(UPS, vars("OB DISCHRG", 60, 900));
    await waitFor(
      "on battery again",
      async () => (await stateRow())?.lastReading?.onBattery === true,
      15_000,
    );
    // The admin's release stands: the monitor adopted it rather than writing its latch back.
    expect((await stateRow())?.latchedAt).toBeNull();
    await peer.stopUpsd();
    const [alarm] = await waitFor(
      "the alarm",
      async () => {
        const list = await eventsOfKind("ups.unreachable");
        return list.length > 0 && list;
      },
      15_000,
    );
    expect(alarm!.severity).toBe("critical"); // last seen on battery
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(await powerRuns()).toHaveLength(1);
    expect((await stateRow())?.reachable).toBe(false);
    await peer.startUpsd();
    await waitFor("answering again", async () => (await eventsOfKind("ups.reachable"))[0], 20_000);
  });

  it("a stale driver is 'no reliable reading': an alarm naming it, never a shutdown", async () => {
    await peer.setVars(UPS, vars("OL", 70, 1200));
    await waitFor(
      "on line",
      async () => (await stateRow())?.lastReading?.onBattery === false,
      15_000,
    );
    const alarmsBefore = (await eventsOfKind("ups.unreachable")).length;
    await peer.stopDriver(UPS, "freeze");
    try {
      const alarm = await waitFor(
        "the stale alarm",
        async () => {
          const list = await eventsOfKind("ups.unreachable");
          return list.length > alarmsBefore && list[list.length - 1];
        },
        20_000,
      );
      expect(alarm.message).toMatch(/DATA-STALE/);
      expect(alarm.severity).toBe("warning");
      expect(await powerRuns()).toHaveLength(1);
    } finally {
      await peer.startDriver(UPS);
    }
  });
});
