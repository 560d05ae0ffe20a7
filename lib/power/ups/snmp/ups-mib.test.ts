import { describe, expect, it } from "vitest";

import { upsMibReading, type UpsMibValues } from "./ups-mib";

const at = new Date("2026-11-30T12:00:00Z");
const where = "SNMP agent at 10.0.0.9:161 (v2c)";

function values(patch: Partial<UpsMibValues>): UpsMibValues {
  return {
    upsOutputSource: 3,
    upsBatteryStatus: 2,
    upsEstimatedChargeRemaining: 100,
    upsEstimatedMinutesRemaining: 30,
    upsSecondsOnBattery: 0,
    ...patch,
  };
}

describe("UPS-MIB values → reading", () => {
  it("reads normal output on a normal battery as on mains, runtime in seconds", () => {
    expect(upsMibReading(values({}), at, where)).toEqual({
      kind: "reading",
      at,
      onBattery: false,
      lowBattery: false,
      chargePercent: 100,
      runtimeSeconds: 1800,
      reportedSecondsOnBattery: 0,
      rawStatus: "upsOutputSource=normal(3) upsBatteryStatus=batteryNormal(2)",
    });
  });

  it("reads output from battery as on battery, and keeps the UPS's own counter only for the record", () => {
    expect(
      upsMibReading(values({ upsOutputSource: 5, upsSecondsOnBattery: 900 }), at, where),
    ).toMatchObject({ onBattery: true, lowBattery: false, reportedSecondsOnBattery: 900 });
  });

  it.each([
    [4, "bypass"],
    [6, "booster"],
    [7, "reducer"],
  ])("reads output source %i (%s) as on mains", (source) => {
    expect(upsMibReading(values({ upsOutputSource: source }), at, where)).toMatchObject({
      kind: "reading",
      onBattery: false,
    });
  });

  it.each([1, 2, 99])(
    "gives no reading for output source %i: it says nothing about mains",
    (source) => {
      expect(upsMibReading(values({ upsOutputSource: source }), at, where).kind).toBe("unreliable");
    },
  );

  it.each([
    [3, true],
    [4, true],
    [2, false],
    [1, false],
  ])("reads battery status %i as low battery %s", (status, low) => {
    expect(
      upsMibReading(values({ upsOutputSource: 5, upsBatteryStatus: status }), at, where),
    ).toMatchObject({ lowBattery: low });
  });

  it("gives no reading without output source or battery status, naming the missing object", () => {
    const reading = upsMibReading(values({ upsOutputSource: null }), at, where);
    expect(reading).toEqual({
      kind: "unreliable",
      at,
      reason: `${where} does not report upsOutputSource (1.3.6.1.2.1.33.1.4.1.0): check that the agent implements the UPS-MIB (RFC 1628)`,
    });
    expect(upsMibReading(values({ upsBatteryStatus: null }), at, where).kind).toBe("unreliable");
  });

  it("reports optional objects the agent lacks as null", () => {
    expect(
      upsMibReading(
        values({
          upsEstimatedChargeRemaining: null,
          upsEstimatedMinutesRemaining: null,
          upsSecondsOnBattery: null,
        }),
        at,
        where,
      ),
    ).toMatchObject({ chargePercent: null, runtimeSeconds: null, reportedSecondsOnBattery: null });
  });
});
