import type { UpsReading } from "@/lib/power/ups/reading";

/**
 * Which readings go into the chart's history: every reading while on battery, every change of
 * status (reachable, on battery, low battery), and on steady mains at most one per 10 s.
 */

export const STEADY_MAINS_EVERY_MS = 10_000;

export type HistoryPoint = {
  at: Date;
  reachable: boolean;
  onBattery: boolean | null;
  lowBattery: boolean | null;
  chargePercent: number | null;
  runtimeSeconds: number | null;
};

export function historyPoint(reading: UpsReading): HistoryPoint {
  if (reading.kind === "unreliable") {
    return {
      at: reading.at,
      reachable: false,
      onBattery: null,
      lowBattery: null,
      chargePercent: null,
      runtimeSeconds: null,
    };
  }
  return {
    at: reading.at,
    reachable: true,
    onBattery: reading.onBattery,
    lowBattery: reading.lowBattery,
    chargePercent: reading.chargePercent,
    runtimeSeconds: reading.runtimeSeconds,
  };
}

export function keepInHistory(last: HistoryPoint | null, point: HistoryPoint): boolean {
  if (last === null || point.onBattery === true) return true;
  if (
    point.reachable !== last.reachable ||
    point.onBattery !== last.onBattery ||
    point.lowBattery !== last.lowBattery
  ) {
    return true;
  }
  return point.at.getTime() - last.at.getTime() >= STEADY_MAINS_EVERY_MS;
}
