import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerShutdownCalls, upsMonitorState } from "@/lib/db/schema";
import { listPowerTargets } from "@/lib/power/operations/power-targets";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import type { UpsSource } from "@/lib/power/ups/reading";
import { createUpsSource } from "@/lib/power/ups/source";
import type { LabNode } from "@/lab";
import { nutExchange } from "@/lab/ups/nut-exchange";
import { startUpsdPeer, UPSD_PEER_USER, type UpsdPeer } from "@/lab/ups/upsd-peer";
import { startUpsmonPrimary, type UpsmonPrimary } from "@/lab/ups/upsmon-peer";
import { registerTestDatabase } from "@/test/db";
import {
  addUps,
  ADMIN,
  onboardedLabNode,
  powerTestPipelines,
  protectHost,
} from "@/test/fixtures/power";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * NUT's own primary is not held up by the console. A real `upsd` (dummy-ups) serves the UPS; a
 * real `upsmon` is its primary, as on the machine the UPS is plugged into; the console watches
 * the same UPS logged in as a secondary, armed, protecting one lab node fed by it. When the UPS
 * goes OB LB the primary waits for every logged-in secondary before it shuts its machine down:
 * it must wait for the console until the console's last target is seen down — and not a moment
 * longer, which only a console that logs out once it is done allows.
 *
 * HOSTSYNC, the primary's limit on that wait, is 60 s here rather than NUT's 15 s: long enough
 * that a busy test machine never lets it run out while the console is still at work, so the
 * order of what happened — never how long it took — is what is asserted. A console that never
 * logs out shows as upsmon's own "Host sync timer expired", with its shutdown after it.
 */

const database = registerTestDatabase(6);
const UPS = "primaryups";
const HOSTSYNC_SECONDS = 60;
const ONLINE = { "ups.status": "OL", "battery.charge": "100", "battery.runtime": "1800" };
const DYING = { "ups.status": "OB DISCHRG LB", "battery.charge": "8", "battery.runtime": "120" };

let worker: WorkerHandle;
let peer: UpsdPeer;
let upsmon: UpsmonPrimary;
let monitor: PowerMonitor;
let node: LabNode;
let upsId: string;
let targetId: string;
const monitorLog: string[] = [];
/** When the console asked its source to log out / in again (the wall clock, before it did). */
const loggedOutAt: number[] = [];
const loggedInAgainAt: number[] = [];

const numLogins = async () => {
  const [answer] = await nutExchange(peer.port, [`GET NUMLOGINS ${UPS}`]);
  const match = /^NUMLOGINS \S+ (\d+)$/.exec(answer?.[0] ?? "");
  if (!match) throw new Error(`upsd answered GET NUMLOGINS with ${JSON.stringify(answer)}`);
  return Number(match[1]);
};

/** The console's own NUT source, its logouts and logins timed as the monitor asks for them. */
function timedSource(source: UpsSource): UpsSource {
  return {
    read: () => source.read(),
    close: () => source.close(),
    async setNeeded(needed) {
      (needed ? loggedInAgainAt : loggedOutAt).push(Date.now());
      await source.setNeeded?.(needed);
    },
  };
}

const diagnostics = () =>
  `\n--- monitor ---\n${monitorLog.join("\n")}\n--- upsmon ---\n${upsmon?.log()}\n--- upsd ---\n${peer?.log()}`;

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
  peer = await startUpsdPeer({ ups: [{ name: UPS, vars: ONLINE }] });
  upsId = await addUps(db, "nut-primary-ups", {
    type: "nut",
    host: peer.host,
    port: peer.port,
    upsName: UPS,
    ...UPSD_PEER_USER,
  });
  const onboarded = await onboardedLabNode(db, "pve-upsmon");
  node = onboarded.node;
  targetId = await protectHost(db, onboarded.hostId, { feeds: [upsId] });
  await updatePowerSettings(
    db,
    {
      triggers: { latchReleaseAfterStableMainsSeconds: 3600 },
      shutdown: { callTimeoutSeconds: 3, targetDownSeconds: 30 },
    },
    ADMIN,
  );
  const targetIds = (await listPowerTargets(db)).map((t) => t.id);
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: targetIds }, ADMIN);
  upsmon = await startUpsmonPrimary({
    port: peer.port,
    ups: UPS,
    hostsyncSeconds: HOSTSYNC_SECONDS,
  });
  monitor = await startPowerMonitor({
    connectionString: url,
    supervisorIntervalMs: 500,
    openSource: (config) => timedSource(createUpsSource(config)),
    log: (line) => monitorLog.push(`${new Date().toISOString()} ${line}`),
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await upsmon?.stop();
  await worker?.stop();
  await Promise.all([peer?.stop(), node?.stop()]);
});

describe("the console beside NUT's own primary upsmon", () => {
  it(
    "holds the primary until its last target is seen down, then logs out and the primary shuts down at once",
    async () => {
      // Both logged in: the primary would wait for the console.
      await waitFor(
        "upsmon and the console logged in",
        async () => (await numLogins()) === 2,
        15_000,
      );

      await peer.setVars(UPS, DYING);
      const shutdownAt = await waitFor(
        "upsmon's SHUTDOWNCMD",
        () => upsmon.shutdownAt(),
        (HOSTSYNC_SECONDS + 60) * 1000,
      );

      // The primary did not run out of patience: it went on because the console logged out.
      expect(upsmon.log(), diagnostics()).not.toContain("Host sync timer expired");
      expect(loggedOutAt, `the console logged out once${diagnostics()}`).toHaveLength(1);
      const loggedOut = loggedOutAt[0]!;
      expect(shutdownAt, diagnostics()).toBeGreaterThan(loggedOut);
      // …and the console logged out only once its target was seen down.
      // A call answered after its timeout under load is sent again: one row per attempt.
      const calls = await database.db
        .select()
        .from(powerShutdownCalls)
        .where(eq(powerShutdownCalls.targetId, targetId));
      const call = calls.find((c) => c.seenDownAt !== null);
      expect(call?.seenDownAt, diagnostics()).toBeTruthy();
      expect(call!.seenDownAt!.getTime()).toBeLessThanOrEqual(loggedOut);
      expect(node.power.state).toBe("down");
      expect(monitorLog.join("\n")).toMatch(/UPS nut-primary-ups: logged out of its NUT server/);

      // The console reads on without logging in again: once upsmon has gone, nobody is logged in.
      await waitFor("upsmon to log out", async () => (await numLogins()) === 0, 15_000);
      const since = new Date();
      await waitFor(
        "a reading after upsmon left",
        async () => {
          const [row] = await database.db
            .select({ at: upsMonitorState.lastReadingAt })
            .from(upsMonitorState)
            .where(eq(upsMonitorState.upsId, upsId));
          return row?.at && row.at > since;
        },
        15_000,
      );
      expect(await numLogins()).toBe(0);
      expect(loggedInAgainAt).toEqual([]);
    },
    (HOSTSYNC_SECONDS + 120) * 1000,
  );

  it("logs in again once the outage is over: mains back and its latch released", async () => {
    await peer.setVars(UPS, ONLINE);
    await waitFor(
      "mains back",
      async () => {
        const [row] = await database.db
          .select()
          .from(upsMonitorState)
          .where(eq(upsMonitorState.upsId, upsId));
        return row?.lastReading?.onBattery === false;
      },
      15_000,
    );
    // Still the same outage while its latch holds (dormant): still logged out.
    expect(await numLogins()).toBe(0);
    await releaseLatch(database.db, { upsId }, ADMIN);
    await waitFor("the console logged in again", async () => (await numLogins()) === 1, 15_000);
    expect(loggedInAgainAt).toHaveLength(1);
  }, 60_000);
});
