import type { UpsReading } from "../reading";

/**
 * What NUT's `ups.status` says about power, from its tokens (NUT docs/new-drivers.txt, "Status
 * data"): OL on line, OB on battery, LB low battery, FSD forced shutdown, plus informational
 * ones (CHRG, DISCHRG, RB, BYPASS, CAL, OFF, OVER, TRIM, BOOST, HB, ALARM, TEST, …). Unknown
 * tokens are tolerated; they only show in the raw status.
 */
export type NutPowerStatus =
  | { known: true; onBattery: boolean; lowBattery: boolean; forcedShutdown: boolean }
  | { known: false; why: string; forcedShutdown: boolean };

export function nutPowerStatus(status: string): NutPowerStatus {
  const tokens = new Set(status.split(/\s+/).filter((token) => token !== ""));
  // FSD: upsmon's primary has declared the end (upsd puts it before the driver's own status).
  // NUT's clients treat it "just like OB LB"; here it is only a flag: `upsmon -c fsd` during
  // NUT maintenance says FSD OL, and a UPS on mains must not shut a fleet down by itself
  // (lib/power/triggers/decide.ts decides what FSD counts as).
  const forcedShutdown = tokens.has("FSD");
  const online = tokens.has("OL");
  const onBattery = tokens.has("OB");
  if (online === onBattery) {
    // Neither (WAIT while a driver starts, OFF, an unknown token alone) or both: no reading
    // of the power source may be made up from that.
    return {
      known: false,
      forcedShutdown,
      why: online
        ? `ups.status "${status}" says both OL and OB`
        : `ups.status "${status}" says neither OL nor OB`,
    };
  }
  return { known: true, onBattery, lowBattery: tokens.has("LB"), forcedShutdown };
}

/** A reading from the variables of `LIST VAR <ups>`, or the reason there is none. */
export function nutReading(vars: ReadonlyMap<string, string>, at: Date, where: string): UpsReading {
  const status = vars.get("ups.status");
  if (status === undefined) {
    return { kind: "unreliable", at, reason: `${where} answered without ups.status` };
  }
  const power = nutPowerStatus(status);
  if (!power.known) {
    return {
      kind: "unreliable",
      at,
      reason: `${where}: ${power.why}`,
      ...(power.forcedShutdown ? { forcedShutdown: true } : {}),
    };
  }
  const charge = nonNegativeNumber(vars.get("battery.charge"));
  return {
    kind: "reading",
    at,
    onBattery: power.onBattery,
    lowBattery: power.lowBattery,
    forcedShutdown: power.forcedShutdown,
    chargePercent: charge === null ? null : Math.min(charge, 100),
    runtimeSeconds: nonNegativeNumber(vars.get("battery.runtime")),
    // NUT has no standard variable for the UPS's own time on battery.
    reportedSecondsOnBattery: null,
    rawStatus: status,
  };
}

/** NUT numbers are plain decimals ("1200.20"); anything else counts as not reported. */
function nonNegativeNumber(value: string | undefined): number | null {
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return null;
  return Number(value);
}
