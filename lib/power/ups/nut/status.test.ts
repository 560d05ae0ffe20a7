import { describe, expect, it } from "vitest";

import { nutPowerStatus, nutReading } from "./status";

const at = new Date("2026-11-30T12:00:00Z");
const where = "upsd at 127.0.0.1:3493 for UPS labups";

function vars(entries: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(entries));
}

describe("NUT ups.status", () => {
  it.each([
    ["OL", false, false],
    ["OL CHRG", false, false],
    ["OL TRIM", false, false],
    ["OL BOOST", false, false],
    ["OL BYPASS", false, false],
    ["OB DISCHRG", true, false],
    ["OB LB", true, true],
    ["OB LB DISCHRG RB", true, true],
    // Batteries charging after an outage can still be low: low battery, but on mains.
    ["OL CHRG LB", false, true],
    ["OB CAL", true, false],
  ])("%s reads as on battery %s, low battery %s", (status, onBattery, lowBattery) => {
    expect(nutPowerStatus(status)).toEqual({
      known: true,
      onBattery,
      lowBattery,
      forcedShutdown: false,
    });
  });

  // upsmon -c fsd during NUT maintenance says FSD OL: the power source is what OL/OB say, and
  // FSD is a flag the trigger decision weighs (never "on battery" by itself).
  it.each([
    ["FSD OL", false, false],
    ["OL FSD", false, false],
    ["FSD OB LB", true, true],
    ["FSD OB", true, false],
  ])(
    "%s reads as on battery %s, low battery %s, with the forced-shutdown flag",
    (status, onBattery, lowBattery) => {
      expect(nutPowerStatus(status)).toEqual({
        known: true,
        onBattery,
        lowBattery,
        forcedShutdown: true,
      });
    },
  );

  it("FSD with neither OL nor OB says nothing reliable about the power source, but keeps the flag", () => {
    expect(nutPowerStatus("FSD WAIT")).toMatchObject({ known: false, forcedShutdown: true });
  });

  it("tolerates tokens it does not know", () => {
    expect(nutPowerStatus("OB HB ECO SOMETHINGNEW")).toEqual({
      known: true,
      onBattery: true,
      lowBattery: false,
      forcedShutdown: false,
    });
  });

  it.each(["WAIT", "OFF", "", "OL OB", "CHRG"])(
    "%j says nothing reliable about the power source",
    (status) => {
      expect(nutPowerStatus(status).known).toBe(false);
    },
  );
});

describe("a reading from LIST VAR", () => {
  it("carries status, charge in % and runtime in seconds", () => {
    expect(
      nutReading(
        vars({ "ups.status": "OB DISCHRG", "battery.charge": "57", "battery.runtime": "1260" }),
        at,
        where,
      ),
    ).toEqual({
      kind: "reading",
      at,
      onBattery: true,
      lowBattery: false,
      forcedShutdown: false,
      chargePercent: 57,
      runtimeSeconds: 1260,
      reportedSecondsOnBattery: null,
      rawStatus: "OB DISCHRG",
    });
  });

  it("reports charge and runtime the UPS does not give, or gives garbled, as null", () => {
    const reading = nutReading(
      vars({ "ups.status": "OL", "battery.charge": "n/a", "battery.runtime": "-5" }),
      at,
      where,
    );
    expect(reading).toMatchObject({ kind: "reading", chargePercent: null, runtimeSeconds: null });
    expect(nutReading(vars({ "ups.status": "OL" }), at, where)).toMatchObject({
      chargePercent: null,
      runtimeSeconds: null,
    });
  });

  it("keeps decimals and caps a charge above 100 %", () => {
    expect(
      nutReading(
        vars({ "ups.status": "OL", "battery.charge": "100.4", "battery.runtime": "95.5" }),
        at,
        where,
      ),
    ).toMatchObject({ chargePercent: 100, runtimeSeconds: 95.5 });
  });

  it("is unreliable without ups.status, or with a status naming no power source", () => {
    expect(nutReading(vars({ "battery.charge": "90" }), at, where)).toEqual({
      kind: "unreliable",
      at,
      reason: `${where} answered without ups.status`,
    });
    expect(nutReading(vars({ "ups.status": "WAIT" }), at, where)).toEqual({
      kind: "unreliable",
      at,
      reason: `${where}: ups.status "WAIT" says neither OL nor OB`,
    });
  });
});
