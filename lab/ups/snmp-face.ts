import type { UpsMibObject } from "@/lib/power/ups/snmp/ups-mib";

import type { LabUpsMibValues } from "./snmp-agent";
import type { PowerSnapshot } from "./timeline";

/**
 * The lab UPS as an SNMP card: the UPS-MIB values of the power timeline now. FSD is NUT's own
 * flag (set by upsmon), so the SNMP face does not show it.
 */
export function upsMibValues(
  power: PowerSnapshot,
  missing: ReadonlySet<UpsMibObject> = new Set(),
): LabUpsMibValues {
  const values: Record<UpsMibObject, number | string> = {
    upsIdentManufacturer: "CluPilot",
    upsIdentModel: "Lab UPS 1500",
    upsBatteryStatus: !power.lowBattery ? 2 : power.chargePercent <= 0 ? 4 : 3,
    upsSecondsOnBattery: Math.floor(power.secondsOnBattery),
    // Whole minutes, rounded down as cards do: never more runtime than there is.
    upsEstimatedMinutesRemaining: Math.floor(power.runtimeSeconds / 60),
    upsEstimatedChargeRemaining: Math.round(power.chargePercent),
    upsOutputSource: power.mains ? 3 : 5,
  };
  for (const name of missing) delete values[name];
  return values;
}
