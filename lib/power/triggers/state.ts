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
  /** When it fired: names the outage ("one accepted call per target per outage"). */
  at: Date;
  /** One line: what fired, with the values that made it fire. */
  reason: string;
  /** The reading that fired (null for the lost-contact trigger). */
  reading: UpsValues | null;
  /**
   * Mains came back after it fired: it stays latched (nothing is released by a blip), but it
   * demands nothing until a trigger row has held afresh on battery for the confirmation. A
   * 1-s blip after a cancelled run is not an outage.
   */
  dormant?: boolean;
};

/**
 * A trigger row that fires but has not held for the confirmation yet (lib/power/triggers/decide.ts):
 * it must go on firing, reading after reading, for `confirmSeconds` by the monotonic clock (the
 * UPS's own low battery: two readings in a row) before it latches.
 */
export type PendingTrigger = {
  trigger: TriggerKind;
  reason: string;
  /** The wall clock when it first fired, for display. */
  since: Date;
  /** How long it has held, by the console's monotonic clock. */
  heldMs: number;
  /** Readings in a row that fired it. */
  readings: number;
  /** Of those, the last ones in a row that fired on the UPS's own low battery. */
  lowBatteryInARow: number;
};

/** The key of the UPS's own trigger among `pending`; other keys are consolidating clusters' ids. */
export const FINAL_TRIGGER = "trigger";

/**
 * A consolidating cluster's first threshold, latched on this UPS: like the trigger's latch it
 * holds until the mains are stable again (or an admin releases the UPS's latch).
 */
export type StageLatch = Omit<Latch, "reading">;

/** A stage latch as stored (JSON). */
export type StoredLatch = { trigger: TriggerKind; at: string; reason: string; dormant?: boolean };

/** A pending trigger as stored (JSON). */
export type StoredPending = Omit<PendingTrigger, "since"> & { since: string };

/**
 * The durations the decisions measure, by the console's monotonic clock: each one grows by the
 * monotonic time between two readings, never by a difference of wall-clock times (an NTP step
 * must neither fire nor delay a trigger). Stored so another worker taking over goes on from them.
 */
export type MonotonicDurations = {
  /** On battery for this long in the current outage (null: on mains or never seen). */
  onBatteryMs: number | null;
  /** On mains without a break for this long (null: on battery or never seen). */
  mainsMs: number | null;
  /** Without a reliable reading for this long (null: answering). */
  alarmMs: number | null;
};

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
  /** The durations the decisions count with (the `…Since` fields above are for display). */
  durations: MonotonicDurations;
  /** Trigger rows firing but not yet confirmed, by FINAL_TRIGGER or cluster id. */
  pending: Record<string, PendingTrigger>;
};

export const UNKNOWN_STATE: UpsMonitorState = {
  reachable: null,
  lastReading: null,
  onBatterySince: null,
  mainsSince: null,
  latch: null,
  stages: {},
  alarm: null,
  durations: { onBatteryMs: null, mainsMs: null, alarmMs: null },
  pending: {},
};

export function toStoredLatches(stages: Record<string, StageLatch>): Record<string, StoredLatch> {
  return Object.fromEntries(
    Object.entries(stages).map(([id, l]) => [
      id,
      {
        trigger: l.trigger,
        at: l.at.toISOString(),
        reason: l.reason,
        ...(l.dormant ? { dormant: true } : {}),
      },
    ]),
  );
}

export function fromStoredLatches(
  stored: Record<string, StoredLatch> | null | undefined,
): Record<string, StageLatch> {
  return Object.fromEntries(
    Object.entries(stored ?? {}).map(([id, l]) => [
      id,
      {
        trigger: l.trigger,
        at: new Date(l.at),
        reason: l.reason,
        ...(l.dormant ? { dormant: true } : {}),
      },
    ]),
  );
}

export function toStoredPending(
  pending: Record<string, PendingTrigger>,
): Record<string, StoredPending> {
  return Object.fromEntries(
    Object.entries(pending).map(([key, p]) => [key, { ...p, since: p.since.toISOString() }]),
  );
}

export function fromStoredPending(
  stored: Record<string, StoredPending> | null | undefined,
): Record<string, PendingTrigger> {
  return Object.fromEntries(
    Object.entries(stored ?? {}).map(([key, p]) => [key, { ...p, since: new Date(p.since) }]),
  );
}

export function toReadingRecord(reading: UpsValues): ReadingRecord {
  const { kind: _kind, at, ...values } = reading;
  return { ...values, at: at.toISOString() };
}

export function fromReadingRecord(record: ReadingRecord): UpsValues {
  return { ...record, kind: "reading", at: new Date(record.at) };
}
