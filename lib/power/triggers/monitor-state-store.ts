import { asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import {
  fromReadingRecord,
  fromStoredLatches,
  fromStoredPending,
  toReadingRecord,
  toStoredLatches,
  toStoredPending,
  UNKNOWN_STATE,
  type TriggerKind,
  type UpsMonitorState,
} from "@/lib/power/triggers/state";

type StateRow = typeof upsMonitorState.$inferSelect;

/** The decision state as the `ups_monitor_state` row holds it. */
export function stateOfRow(row: StateRow | null | undefined): UpsMonitorState {
  if (!row) return UNKNOWN_STATE;
  return {
    reachable: row.reachable,
    lastReading: row.lastReading ? fromReadingRecord(row.lastReading) : null,
    onBatterySince: row.onBatterySince,
    mainsSince: row.mainsSince,
    latch:
      row.latchedTrigger && row.latchedAt
        ? {
            trigger: row.latchedTrigger as TriggerKind,
            at: row.latchedAt,
            reason: row.latchedReason ?? "",
            reading: row.latchedReading ? fromReadingRecord(row.latchedReading) : null,
            ...(row.latchDormant ? { dormant: true } : {}),
          }
        : null,
    stages: fromStoredLatches(row.consolidateLatches),
    alarm: row.alarmSince ? { since: row.alarmSince, reason: row.alarmReason ?? "" } : null,
    durations: row.durations,
    pending: fromStoredPending(row.pendingTriggers),
  };
}

/** The row's columns for a decision state. */
export function columnsOfState(state: UpsMonitorState) {
  return {
    reachable: state.reachable,
    lastReading: state.lastReading ? toReadingRecord(state.lastReading) : null,
    lastReadingAt: state.lastReading?.at ?? null,
    onBatterySince: state.onBatterySince,
    mainsSince: state.mainsSince,
    latchedTrigger: state.latch?.trigger ?? null,
    latchedAt: state.latch?.at ?? null,
    latchedReason: state.latch?.reason ?? null,
    latchedReading: state.latch?.reading ? toReadingRecord(state.latch.reading) : null,
    latchDormant: state.latch?.dormant === true,
    durations: state.durations,
    pendingTriggers: toStoredPending(state.pending),
    consolidateLatches: toStoredLatches(state.stages),
    alarmSince: state.alarm?.since ?? null,
    alarmReason: state.alarm?.reason ?? null,
  } satisfies Partial<typeof upsMonitorState.$inferInsert>;
}

export type MonitoredUps = {
  upsId: string;
  name: string;
  state: UpsMonitorState;
  leaseOwner: string | null;
  leaseUntil: Date | null;
};

/** Every UPS with what its monitor last persisted (the unknown state before its first reading). */
export async function readMonitorStates(db: Pick<Database, "select">): Promise<MonitoredUps[]> {
  const rows = await db
    .select({ device: upsDevices, state: upsMonitorState })
    .from(upsDevices)
    .leftJoin(upsMonitorState, eq(upsMonitorState.upsId, upsDevices.id))
    .orderBy(asc(upsDevices.name));
  return rows.map(({ device, state }) => ({
    upsId: device.id,
    name: device.name,
    state: stateOfRow(state),
    leaseOwner: state?.leaseOwner ?? null,
    leaseUntil: state?.leaseUntil ?? null,
  }));
}
