import { asc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { effectiveTriggers, type TriggerSettings } from "@/lib/power/config/settings";
import { FINAL_TRIGGER, type TriggerKind } from "@/lib/power/triggers/state";
import { describeUpsSource, type PublicUpsSource } from "@/lib/power/config/ups-source-config";

/**
 * What an operator reads off one UPS at a glance. `condition` is never a guess: without a
 * reliable reading it says so, and the last thing the UPS said is kept beside it.
 *
 * - not-asked:    no monitor has polled it yet
 * - no-reading:   the UPS (or its server) does not give a reliable reading now: alarm
 * - on-mains / on-battery / low-battery: the last reliable reading, which is current
 */
export type UpsCondition = "not-asked" | "no-reading" | "on-mains" | "on-battery" | "low-battery";

export type UpsCard = {
  id: string;
  name: string;
  /** `NUT ups1@10.0.0.9:3493`, `SNMP v3 10.0.0.8:161`: never a secret. */
  source: string;
  sourceType: PublicUpsSource["type"];
  condition: UpsCondition;
  reachable: boolean | null;
  /** From the last reliable reading (possibly older than the alarm). */
  lastReading: {
    at: string;
    onBattery: boolean;
    lowBattery: boolean;
    chargePercent: number | null;
    runtimeSeconds: number | null;
    rawStatus: string;
  } | null;
  /** Start of the current outage by the console's own clock; null on mains or unknown. */
  onBatterySince: string | null;
  alarm: { since: string; reason: string } | null;
  /**
   * The latched trigger. `dormant`: mains came back since it fired — it demands nothing until a
   * trigger holds again on battery (it is released after stable mains, or by an admin).
   */
  latch: { trigger: TriggerKind; at: string; reason: string; dormant: boolean } | null;
  /** The UPS's own trigger firing but not confirmed yet (it must hold a moment before it fires). */
  pending: { trigger: TriggerKind; reason: string; since: string } | null;
  /** Until when a worker's monitor holds this UPS; past or null: nobody is watching it. */
  watchedUntil: string | null;
  triggers: TriggerSettings;
  /** The UPS's output is cycled after a shutdown that saw every host on it down (off by default). */
  outputCycle: boolean;
};

/** Every UPS with what its monitor last recorded, by name. */
export async function listUpsCards(
  db: Database,
  triggerDefaults: TriggerSettings,
): Promise<UpsCard[]> {
  const rows = await db
    .select({ ups: upsDevices, state: upsMonitorState })
    .from(upsDevices)
    .leftJoin(upsMonitorState, eq(upsMonitorState.upsId, upsDevices.id))
    .orderBy(asc(upsDevices.name));
  return rows.map(({ ups, state }): UpsCard => {
    const reading = state?.lastReading ?? null;
    const alarm =
      state?.alarmSince && state.alarmReason
        ? { since: state.alarmSince.toISOString(), reason: state.alarmReason }
        : null;
    return {
      id: ups.id,
      name: ups.name,
      source: describeUpsSource(ups.source),
      sourceType: ups.source.type,
      condition: conditionOf(state?.reachable ?? null, alarm !== null, reading),
      reachable: state?.reachable ?? null,
      lastReading: reading && {
        at: reading.at,
        onBattery: reading.onBattery,
        lowBattery: reading.lowBattery,
        chargePercent: reading.chargePercent,
        runtimeSeconds: reading.runtimeSeconds,
        rawStatus: reading.rawStatus,
      },
      onBatterySince: reading?.onBattery ? (state?.onBatterySince?.toISOString() ?? null) : null,
      alarm,
      latch:
        state?.latchedTrigger && state.latchedAt
          ? {
              trigger: state.latchedTrigger as TriggerKind,
              at: state.latchedAt.toISOString(),
              reason: state.latchedReason ?? state.latchedTrigger,
              dormant: state.latchDormant,
            }
          : null,
      pending: pendingOf(state?.pendingTriggers ?? {}),
      watchedUntil: state?.leaseUntil?.toISOString() ?? null,
      triggers: effectiveTriggers(triggerDefaults, ups.triggerOverrides),
      outputCycle: ups.outputCycle,
    };
  });
}

function pendingOf(
  pending: Record<string, { trigger: TriggerKind; reason: string; since: string }>,
): UpsCard["pending"] {
  const own = pending[FINAL_TRIGGER];
  return own ? { trigger: own.trigger, reason: own.reason, since: own.since } : null;
}

function conditionOf(
  reachable: boolean | null,
  alarmed: boolean,
  reading: { onBattery: boolean; lowBattery: boolean } | null,
): UpsCondition {
  if (alarmed || reachable === false) return "no-reading";
  if (!reading) return "not-asked";
  if (reading.onBattery) return reading.lowBattery ? "low-battery" : "on-battery";
  return "on-mains";
}
