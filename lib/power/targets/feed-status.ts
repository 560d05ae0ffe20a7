import { eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { effectiveTriggers } from "@/lib/power/config/settings";

/**
 * Which UPSes are on mains right now by a recent reliable reading. Anything else — on battery,
 * unreachable, a reading older than `maxAgeMs` (no monitor is reading it) — is not "on mains":
 * a UPS the console cannot ask might still be on battery.
 */
export async function feedsOnMains(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
  now: Date,
  maxAgeMs: number,
): Promise<Map<string, boolean>> {
  if (upsIds.length === 0) return new Map();
  const rows = await db
    .select({
      upsId: upsMonitorState.upsId,
      reachable: upsMonitorState.reachable,
      lastReading: upsMonitorState.lastReading,
      lastReadingAt: upsMonitorState.lastReadingAt,
    })
    .from(upsMonitorState)
    .where(inArray(upsMonitorState.upsId, [...upsIds]));
  return new Map(
    rows.map((row) => [
      row.upsId,
      row.reachable === true &&
        row.lastReading?.onBattery === false &&
        row.lastReadingAt !== null &&
        now.getTime() - row.lastReadingAt.getTime() <= maxAgeMs,
    ]),
  );
}

/**
 * Which UPSes have held mains for their trigger confirmation by now: a recent reliable "on
 * mains" reading whose stable-mains time, by the monitor's monotonic clock, is at least the
 * UPS's `confirmSeconds` (a blip of mains is not power back, as a blip of battery is no outage).
 */
export async function feedsBackFor(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
  now: Date,
  maxAgeMs: number,
): Promise<Map<string, boolean>> {
  if (upsIds.length === 0) return new Map();
  const settings = await readPowerSettings(db);
  const rows = await db
    .select({ state: upsMonitorState, overrides: upsDevices.triggerOverrides })
    .from(upsMonitorState)
    .innerJoin(upsDevices, eq(upsDevices.id, upsMonitorState.upsId))
    .where(inArray(upsMonitorState.upsId, [...upsIds]));
  return new Map(
    rows.map(({ state, overrides }) => {
      const confirmMs = effectiveTriggers(settings.triggers, overrides).confirmSeconds * 1000;
      const fresh =
        state.lastReadingAt !== null && now.getTime() - state.lastReadingAt.getTime() <= maxAgeMs;
      return [
        state.upsId,
        state.reachable === true &&
          state.lastReading?.onBattery === false &&
          fresh &&
          (state.durations.mainsMs ?? 0) >= confirmMs,
      ];
    }),
  );
}

/**
 * The UPSes the console cannot ask now: no reliable reading (an alarm), never read, or a last
 * reading older than `maxAgeMs` (no monitor reads it). What a redundant host's `all` policy
 * must not read as "on mains" (due-targets.ts).
 */
export async function unknownFeeds(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
  now: Date,
  maxAgeMs: number,
): Promise<Set<string>> {
  if (upsIds.length === 0) return new Set();
  const rows = await db
    .select({
      upsId: upsMonitorState.upsId,
      reachable: upsMonitorState.reachable,
      lastReadingAt: upsMonitorState.lastReadingAt,
    })
    .from(upsMonitorState)
    .where(inArray(upsMonitorState.upsId, [...upsIds]));
  const known = new Set(
    rows
      .filter(
        (r) =>
          r.reachable === true &&
          r.lastReadingAt !== null &&
          now.getTime() - r.lastReadingAt.getTime() <= maxAgeMs,
      )
      .map((r) => r.upsId),
  );
  return new Set(upsIds.filter((id) => !known.has(id)));
}

/** What the power-back policy reads of one UPS (lib/power/power-back/policy.ts). */
export type FeedFacts = {
  upsId: string;
  name: string;
  /** The last reading was reliable (null: never asked). */
  reachable: boolean | null;
  /** When that reading was taken, by the wall clock (null: none yet). */
  readingAt: Date | null;
  onBattery: boolean | null;
  /** On mains without a break for this long, by the monitor's monotonic clock. */
  mainsMs: number | null;
  chargePercent: number | null;
  runtimeSeconds: number | null;
};

/** The monitor's last word on each of these UPSes (a UPS never read yet: all unknown). */
export async function feedFacts(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
): Promise<FeedFacts[]> {
  if (upsIds.length === 0) return [];
  const rows = await db
    .select({ id: upsDevices.id, name: upsDevices.name, state: upsMonitorState })
    .from(upsDevices)
    .leftJoin(upsMonitorState, eq(upsMonitorState.upsId, upsDevices.id))
    .where(inArray(upsDevices.id, [...upsIds]));
  return rows.map(({ id, name, state }) => ({
    upsId: id,
    name,
    reachable: state?.reachable ?? null,
    readingAt: state?.lastReadingAt ?? null,
    onBattery: state?.lastReading?.onBattery ?? null,
    mainsMs: state?.durations.mainsMs ?? null,
    chargePercent: state?.lastReading?.chargePercent ?? null,
    runtimeSeconds: state?.lastReading?.runtimeSeconds ?? null,
  }));
}

/** Of these UPSes, those a fresh reliable reading shows on battery: a new outage. */
export async function feedsOnBattery(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
  now: Date,
  maxAgeMs: number,
): Promise<FeedFacts[]> {
  return (await feedFacts(db, upsIds)).filter(
    (f) =>
      f.reachable === true &&
      f.onBattery === true &&
      f.readingAt !== null &&
      now.getTime() - f.readingAt.getTime() <= maxAgeMs,
  );
}
