import type { UpsReading } from "@/lib/power/ups/reading";

/** A reliable reading. */
export type UpsValues = Extract<UpsReading, { kind: "reading" }>;

/** A reliable reading as stored (JSON): the time as an ISO string. */
export type ReadingRecord = Omit<UpsValues, "kind" | "at"> & { at: string };

export const TRIGGER_KINDS = [
  "low_battery",
  "runtime",
  "charge",
  "on_battery_for",
  "unreachable_on_battery",
] as const;
export type TriggerKind = (typeof TRIGGER_KINDS)[number];

export type Latch = {
  trigger: TriggerKind;
  at: Date;
  /** One line: what fired, with the values that made it fire. */
  reason: string;
  /** The reading that fired (null for the lost-contact trigger). */
  reading: UpsValues | null;
};

/**
 * A consolidating cluster's first threshold, latched on this UPS: like the trigger's latch it
 * holds until the mains are stable again (or an admin releases the UPS's latch).
 */
export type StageLatch = Omit<Latch, "reading">;

/** A stage latch as stored (JSON). */
export type StoredLatch = { trigger: TriggerKind; at: string; reason: string };

/**
 * What the monitor knows about one UPS between two readings. Every time in it is the console's
 * own clock; nothing here comes from the UPS's own on-battery counter.
 */
export type UpsMonitorState = {
  /** null: the console has not asked yet. */
  reachable: boolean | null;
  /** The last reliable reading; "on battery" means its `onBattery`. */
  lastReading: UpsValues | null;
  /** Start of the current outage as the console saw it (mains→battery). */
  onBatterySince: Date | null;
  /** Since when the UPS is on mains without a break the console saw. */
  mainsSince: Date | null;
  latch: Latch | null;
  /** Consolidating clusters' first thresholds that fired, by cluster id (empty: none). */
  stages: Record<string, StageLatch>;
  /** Set while there is no reliable reading: since when, and why. */
  alarm: { since: Date; reason: string } | null;
};

export const UNKNOWN_STATE: UpsMonitorState = {
  reachable: null,
  lastReading: null,
  onBatterySince: null,
  mainsSince: null,
  latch: null,
  stages: {},
  alarm: null,
};

export function toStoredLatches(stages: Record<string, StageLatch>): Record<string, StoredLatch> {
  return Object.fromEntries(
    Object.entries(stages).map(([id, l]) => [
      id,
      { trigger: l.trigger, at: l.at.toISOString(), reason: l.reason },
    ]),
  );
}

export function fromStoredLatches(
  stored: Record<string, StoredLatch> | null | undefined,
): Record<string, StageLatch> {
  return Object.fromEntries(
    Object.entries(stored ?? {}).map(([id, l]) => [
      id,
      { trigger: l.trigger, at: new Date(l.at), reason: l.reason },
    ]),
  );
}

export function toReadingRecord(reading: UpsValues): ReadingRecord {
  const { kind: _kind, at, ...values } = reading;
  return { ...values, at: at.toISOString() };
}

export function fromReadingRecord(record: ReadingRecord): UpsValues {
  return { ...record, kind: "reading", at: new Date(record.at) };
}
