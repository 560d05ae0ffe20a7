import { describe, expect, it } from "vitest";

import { nutStatus, nutVars } from "./nut-face";
import { upsMibValues } from "./snmp-face";
import type { PowerSnapshot } from "./timeline";

function power(patch: Partial<PowerSnapshot>): PowerSnapshot {
  return {
    mains: true,
    chargePercent: 100,
    runtimeSeconds: 1800,
    lowBattery: false,
    forcedShutdown: false,
    secondsOnBattery: 0,
    lowBatteryPercent: 20,
    held: false,
    ...patch,
  };
}

describe("the lab UPS's NUT face", () => {
  it.each([
    [{}, "OL"],
    [{ chargePercent: 80 }, "OL CHRG"],
    [{ chargePercent: 10, lowBattery: true }, "OL CHRG LB"],
    [{ mains: false, chargePercent: 60 }, "OB DISCHRG"],
    [{ mains: false, chargePercent: 10, lowBattery: true }, "OB DISCHRG LB"],
    [{ forcedShutdown: true }, "FSD OL"],
  ] as const)("%j has ups.status %s", (patch, status) => {
    expect(nutStatus(power(patch))).toBe(status);
  });

  it("publishes charge and runtime as whole numbers, and no input voltage on battery", () => {
    const vars = nutVars(power({ mains: false, chargePercent: 56.6, runtimeSeconds: 1019.4 }));
    expect(vars.get("battery.charge")).toBe("57");
    expect(vars.get("battery.runtime")).toBe("1019");
    expect(vars.get("input.voltage")).toBe("0.0");
  });
});

describe("the lab UPS's SNMP face", () => {
  it("serves the UPS-MIB values of the power state, minutes rounded down", () => {
    expect(
      upsMibValues(
        power({ mains: false, chargePercent: 57.4, runtimeSeconds: 1079, secondsOnBattery: 42.9 }),
      ),
    ).toMatchObject({
      upsOutputSource: 5,
      upsBatteryStatus: 2,
      upsEstimatedChargeRemaining: 57,
      upsEstimatedMinutesRemaining: 17,
      upsSecondsOnBattery: 42,
    });
  });

  it("says batteryLow at the threshold and batteryDepleted when empty", () => {
    expect(upsMibValues(power({ chargePercent: 10, lowBattery: true })).upsBatteryStatus).toBe(3);
    expect(upsMibValues(power({ chargePercent: 0, lowBattery: true })).upsBatteryStatus).toBe(4);
  });

  it("leaves out the objects the card does not have", () => {
    const values = upsMibValues(power({}), new Set(["upsSecondsOnBattery"] as const));
    expect("upsSecondsOnBattery" in values).toBe(false);
    expect(values.upsOutputSource).toBe(3);
  });
});
