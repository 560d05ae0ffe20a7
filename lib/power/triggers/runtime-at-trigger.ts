import { formatDuration } from "@/lib/logs/text";
import type { TriggerSettings } from "@/lib/power/config/settings";
import type { UpsValues } from "./state";

/**
 * The battery runtime left when this UPS's trigger fires: what the shutdown plan must fit in —
 * not the runtime the UPS reports today, on mains and full. The trigger fires at the first row
 * that fires, which is the one that leaves the most; each row's estimate:
 *
 * | row                     | runtime left when it fires                                     |
 * | ----------------------- | -------------------------------------------------------------- |
 * | runtime below R         | R                                                              |
 * | charge below C %        | C × the UPS's own seconds per percent now (runtime ÷ charge)   |
 * | on battery for N s      | a full battery's runtime at this load (that ratio × 100), − N |
 * | the UPS's low battery   | not known: the UPS decides when (its own `battery.runtime.low`) |
 *
 * Null (with why) when no row can be estimated: then the budget cannot be checked, and the
 * self-test says so instead of calling it fine.
 */
export type RuntimeAtTrigger = { seconds: number; row: string } | { seconds: null; why: string };

export function runtimeAtTrigger(
  triggers: Pick<
    TriggerSettings,
    "lowBattery" | "runtimeBelowSeconds" | "chargeBelowPercent" | "onBatteryForSeconds"
  >,
  reading: Pick<UpsValues, "runtimeSeconds" | "chargePercent"> | null,
): RuntimeAtTrigger {
  const perPercent =
    reading?.runtimeSeconds != null && reading.chargePercent != null && reading.chargePercent > 0
      ? reading.runtimeSeconds / reading.chargePercent
      : null;
  const rows: { seconds: number; row: string }[] = [];
  if (triggers.runtimeBelowSeconds !== null) {
    rows.push({
      seconds: triggers.runtimeBelowSeconds,
      row: `runtime below ${span(triggers.runtimeBelowSeconds)}`,
    });
  }
  if (triggers.chargeBelowPercent !== null && perPercent !== null) {
    rows.push({
      seconds: Math.round(triggers.chargeBelowPercent * perPercent),
      row: `charge below ${triggers.chargeBelowPercent} % at ${span(perPercent)} per % (the UPS's own ratio now)`,
    });
  }
  if (triggers.onBatteryForSeconds !== null && perPercent !== null) {
    const left = Math.round(100 * perPercent - triggers.onBatteryForSeconds);
    rows.push({
      seconds: Math.max(0, left),
      row: `${span(triggers.onBatteryForSeconds)} on battery, of a full battery's ${span(100 * perPercent)} at this load`,
    });
  }
  if (rows.length > 0) return rows.reduce((most, r) => (r.seconds > most.seconds ? r : most));
  if (reading === null) return { seconds: null, why: "no reading of this UPS yet" };
  if (
    perPercent === null &&
    (triggers.chargeBelowPercent !== null || triggers.onBatteryForSeconds !== null)
  ) {
    return { seconds: null, why: "the UPS reports no charge and runtime to estimate from" };
  }
  return {
    seconds: null,
    why: triggers.lowBattery
      ? "only the UPS's own low battery fires: the runtime left then is the UPS's to decide"
      : "no trigger row is set",
  };
}

function span(seconds: number): string {
  return formatDuration(seconds * 1000);
}
