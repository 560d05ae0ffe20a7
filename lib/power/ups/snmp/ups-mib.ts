import type { UpsReading } from "../reading";

/**
 * The UPS-MIB objects (RFC 1628, `upsMIB` 1.3.6.1.2.1.33) the console reads, and what their
 * values mean in the console's terms.
 */
export const UPS_MIB = {
  upsIdentManufacturer: "1.3.6.1.2.1.33.1.1.1.0",
  upsIdentModel: "1.3.6.1.2.1.33.1.1.2.0",
  /** unknown(1), batteryNormal(2), batteryLow(3), batteryDepleted(4). */
  upsBatteryStatus: "1.3.6.1.2.1.33.1.2.1.0",
  /** Seconds since the UPS last switched to battery, 0 on mains. Recorded, never trusted. */
  upsSecondsOnBattery: "1.3.6.1.2.1.33.1.2.2.0",
  /** Minutes until the battery is depleted at the present load. */
  upsEstimatedMinutesRemaining: "1.3.6.1.2.1.33.1.2.3.0",
  /** Percent of full charge. */
  upsEstimatedChargeRemaining: "1.3.6.1.2.1.33.1.2.4.0",
  /** other(1), none(2), normal(3), bypass(4), battery(5), booster(6), reducer(7). */
  upsOutputSource: "1.3.6.1.2.1.33.1.4.1.0",
} as const;

export type UpsMibObject = keyof typeof UPS_MIB;

/** The objects one poll asks for; the first two are required for a reading. */
export const POLLED_OBJECTS = [
  "upsOutputSource",
  "upsBatteryStatus",
  "upsEstimatedChargeRemaining",
  "upsEstimatedMinutesRemaining",
  "upsSecondsOnBattery",
] as const satisfies readonly UpsMibObject[];

export type PolledObject = (typeof POLLED_OBJECTS)[number];

/** The integer each polled object answered, or null when the agent does not have it. */
export type UpsMibValues = Record<PolledObject, number | null>;

const BATTERY_STATUS: Record<number, string> = {
  1: "unknown",
  2: "batteryNormal",
  3: "batteryLow",
  4: "batteryDepleted",
};

const OUTPUT_SOURCE: Record<number, string> = {
  1: "other",
  2: "none",
  3: "normal",
  4: "bypass",
  5: "battery",
  6: "booster",
  7: "reducer",
};

/**
 * upsOutputSource → is the load on battery. Deliberately: bypass, booster (AVR raising a low
 * line voltage) and reducer (lowering a high one) all feed the load from mains; `battery` is
 * the only value meaning on battery. `none` (output off) and `other` say nothing about mains,
 * so they give no reading rather than a guess.
 */
const ON_BATTERY: Record<number, boolean> = { 3: false, 4: false, 5: true, 6: false, 7: false };

export function upsMibReading(values: UpsMibValues, at: Date, where: string): UpsReading {
  const source = values.upsOutputSource;
  const battery = values.upsBatteryStatus;
  if (source === null || battery === null) {
    const missing = source === null ? "upsOutputSource" : "upsBatteryStatus";
    return {
      kind: "unreliable",
      at,
      reason: `${where} does not report ${missing} (${UPS_MIB[missing]}): check that the agent implements the UPS-MIB (RFC 1628)`,
    };
  }
  const onBattery = ON_BATTERY[source];
  const rawStatus = `upsOutputSource=${OUTPUT_SOURCE[source] ?? "?"}(${source}) upsBatteryStatus=${BATTERY_STATUS[battery] ?? "?"}(${battery})`;
  if (onBattery === undefined) {
    return { kind: "unreliable", at, reason: `${where}: ${rawStatus} says nothing about mains` };
  }
  const charge = values.upsEstimatedChargeRemaining;
  const minutes = values.upsEstimatedMinutesRemaining;
  return {
    kind: "reading",
    at,
    onBattery,
    // unknown(1) is not "low": charge, runtime and time-on-battery triggers still apply.
    lowBattery: battery === 3 || battery === 4,
    chargePercent: charge === null || charge < 0 ? null : Math.min(charge, 100),
    runtimeSeconds: minutes === null || minutes < 0 ? null : minutes * 60,
    reportedSecondsOnBattery: values.upsSecondsOnBattery,
    rawStatus,
  };
}
