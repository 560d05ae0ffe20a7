import { randomBytes } from "node:crypto";
import os from "node:os";
import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import { createDb } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import { stageThresholdsByUps } from "@/lib/power/consolidate/thresholds";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { effectiveTriggers } from "@/lib/power/config/settings";
import { readSecret } from "@/lib/power/config/ups-secret-store";
import { joinUpsSource } from "@/lib/power/config/ups-source-config";
import type { TUpsSourceConfig, UpsSource } from "@/lib/power/ups/reading";
import { createUpsSource } from "@/lib/power/ups/source";
import { stateOfRow } from "../triggers/monitor-state-store";
import { OfflineShutdowns } from "./offline-shutdowns";
import { watchPowerBack } from "./power-back-watch";
import { watchShedding } from "./shed-watch";
import { loadStandbyPlan, type StandbyPlan } from "./standby-plan";
import { LEASE_SECONDS, UpsLoop } from "./ups-loop";

/**
 * The power monitor of one worker process: every few seconds it looks at the UPS devices,
 * renews the leases of the UPSes it watches, takes the lease of any UPS nobody holds (or whose
 * holder stopped renewing — a dead process), and runs one UpsLoop per UPS it holds. Exactly one
 * monitor per UPS across all worker processes; a dead process's UPSes are taken over within
 * LEASE_SECONDS plus one supervisor interval.
 */

export type PowerMonitorOptions = {
  connectionString: string;
  /** Opens a UPS's source from its full settings; default: NUT or SNMP by its type. */
  openSource?: (config: TUpsSourceConfig) => UpsSource;
  log?: (line: string) => void;
  /** How often devices are looked at and leases renewed. Default 2 s. */
  supervisorIntervalMs?: number;
};

export type PowerMonitor = {
  /** This process's name on the leases it holds. */
  ownerId: string;
  /** The UPS ids this process watches now. */
  watching(): string[];
  /** The plan held in memory for a shutdown without the database: its version and mode. */
  standbyPlan(): { version: string; mode: string; loadedAt: Date } | null;
  stop(): Promise<void>;
};

type Watched = { loop: UpsLoop; version: string };

export async function startPowerMonitor(options: PowerMonitorOptions): Promise<PowerMonitor> {
  const log = options.log ?? ((line: string) => console.log(line));
  const openSource = options.openSource ?? ((config) => createUpsSource(config));
  const ownerId = `${os.hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const { pool, db } = createDb(
    options.connectionString,
    6,
    trackReachability({
      log: (line) => log(`power monitor: ${line}`),
      meanwhile: "the UPSes are still read and decided in memory",
    }),
  );
  const watched = new Map<string, Watched>();
  let failing = false;
  let stopped = false;
  // The plan held in memory for a shutdown without the database (./standby-plan.ts).
  let standby: StandbyPlan | null = null;
  const offline = new OfflineShutdowns({
    standby: () => standby,
    watched: () =>
      [...watched.entries()].map(([id, w]) => ({
        id,
        state: w.loop.currentState,
        confirmSeconds: w.loop.triggers.confirmSeconds,
      })),
    log,
  });

  const release = async (upsIds: readonly string[]) => {
    if (upsIds.length === 0) return;
    await db
      .update(upsMonitorState)
      .set({ leaseOwner: null, leaseUntil: null })
      .where(
        and(eq(upsMonitorState.leaseOwner, ownerId), inArray(upsMonitorState.upsId, [...upsIds])),
      );
  };

  const stopWatching = async (upsId: string) => {
    const entry = watched.get(upsId);
    watched.delete(upsId);
    await entry?.loop.stop();
  };

  const tick = async () => {
    // What was done without the database is recorded as soon as it answers (any lease), before
    // anything here that could fail on its own (a settings row that does not parse).
    if (offline.pending) offline.committed(await db.transaction((tx) => offline.flush(tx)));
    const settings = await readPowerSettings(db);
    const devices = await db.select().from(upsDevices);
    const stages = await stageThresholdsByUps(db);
    standby = await loadStandbyPlan(db, standby);

    // Renew what we hold; whatever is no longer ours was taken over: stop watching it.
    const held = [...watched.keys()];
    if (held.length > 0) {
      const renewed = await db
        .update(upsMonitorState)
        .set({ leaseUntil: sql`now() + make_interval(secs => ${LEASE_SECONDS})` })
        .where(and(eq(upsMonitorState.leaseOwner, ownerId), inArray(upsMonitorState.upsId, held)))
        .returning({ upsId: upsMonitorState.upsId });
      const kept = new Set(renewed.map((r) => r.upsId));
      for (const upsId of held.filter((id) => !kept.has(id))) {
        log(`power monitor: lost the lease of UPS ${upsId} to another worker; stopped watching it`);
        await stopWatching(upsId);
      }
    }

    for (const device of devices) {
      const version = `${device.updatedAt.toISOString()}|${device.secretCredentialId ?? ""}`;
      const entry = watched.get(device.id);
      const loopSettings = {
        triggers: effectiveTriggers(settings.triggers, device.triggerOverrides),
        pollIntervalMs: settings.pollIntervalMs,
        stages: stages.get(device.id) ?? [],
      };
      if (entry && entry.version === version) {
        entry.loop.configure(loopSettings);
        continue;
      }
      // A changed UPS is watched anew with its new settings (lease kept).
      if (entry) await stopWatching(device.id);
      const [row] = await db
        .insert(upsMonitorState)
        .values({
          upsId: device.id,
          leaseOwner: ownerId,
          leaseUntil: sql`now() + make_interval(secs => ${LEASE_SECONDS})`,
        })
        .onConflictDoUpdate({
          target: upsMonitorState.upsId,
          set: {
            leaseOwner: ownerId,
            leaseUntil: sql`now() + make_interval(secs => ${LEASE_SECONDS})`,
          },
          setWhere: or(
            eq(upsMonitorState.leaseOwner, ownerId),
            isNull(upsMonitorState.leaseUntil),
            lt(upsMonitorState.leaseUntil, sql`now()`),
          ),
        })
        .returning();
      if (!row) continue; // another worker watches it
      let source: UpsSource;
      try {
        source = openSource(
          joinUpsSource(device.source, await readSecret(db, device.secretCredentialId)),
        );
      } catch (error) {
        log(`power monitor: cannot watch UPS ${device.name}: ${safeErrorSummary(error)}`);
        await release([device.id]);
        continue;
      }
      if (!entry) log(`power monitor: watching UPS ${device.name}`);
      const loop = new UpsLoop({
        db,
        ownerId,
        ups: { id: device.id, name: device.name },
        source,
        state: stateOfRow(row),
        stateWrittenAt: row.updatedAt,
        settings: loopSettings,
        log,
        offline,
        onEnd: (reason) => {
          if (watched.get(device.id)?.loop === loop) watched.delete(device.id);
          if (!stopped && reason !== "stopped") log(`power monitor: UPS ${device.name}: ${reason}`);
        },
      });
      watched.set(device.id, { loop, version });
    }

    // Devices removed: stop watching them (their state went with them).
    const existing = new Set(devices.map((d) => d.id));
    for (const upsId of [...watched.keys()].filter((id) => !existing.has(id))) {
      await stopWatching(upsId);
    }

    // The way back: a new outage stops it, the policy starts it (./power-back-watch.ts). Only a
    // process that watches a UPS decides, from what the monitors persisted; its own failure
    // never keeps the UPSes from being watched.
    if (watched.size > 0) {
      await watchPowerBack(db, new Date(), log).catch((error: unknown) =>
        log(`power monitor: could not look at the way back: ${safeErrorSummary(error)}`),
      );
      await watchShedding(db, new Date(), log).catch((error: unknown) =>
        log(`power monitor: could not look at early shedding: ${safeErrorSummary(error)}`),
      );
    }
  };

  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  const supervise = (): Promise<void> => {
    running = tick().then(
      () => {
        if (failing) log("power monitor: the database answers again");
        failing = false;
      },
      (error: unknown) => {
        if (!failing) {
          log(
            `power monitor: could not look at the UPS devices (${safeErrorSummary(error)}); the UPSes already watched go on, retrying`,
          );
        }
        failing = true;
      },
    );
    return running;
  };
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => void supervise().then(next), options.supervisorIntervalMs ?? 2000);
  };
  await supervise();
  next();

  return {
    ownerId,
    watching: () => [...watched.keys()],
    standbyPlan: () =>
      standby
        ? { version: standby.version, mode: standby.settings.mode, loadedAt: standby.loadedAt }
        : null,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      const held = [...watched.keys()];
      await Promise.all(held.map((upsId) => stopWatching(upsId)));
      await offline.stop();
      if (offline.pending) {
        await db
          .transaction((tx) => offline.flush(tx))
          .then((ids) => offline.committed(ids))
          .catch((error: unknown) =>
            log(
              `power monitor: could not record the shutdown done without the database before stopping (${safeErrorSummary(error)}); its calls were sent, its record is lost`,
            ),
          );
      }
      // Handing the leases back lets another worker take over at once, not after they expire.
      await release(held).catch(() => {});
      await pool.end();
    },
  };
}
