import { describe, expect, it } from "vitest";
import { keepInHistory, type HistoryPoint } from "./history-rule";

const T0 = Date.parse("2026-12-01T10:00:00Z");
const point = (seconds: number, values: Partial<HistoryPoint> = {}): HistoryPoint => ({
  at: new Date(T0 + seconds * 1000),
  reachable: true,
  onBattery: false,
  lowBattery: false,
  chargePercent: 100,
  runtimeSeconds: 3600,
  ...values,
});

describe("the reading history rule", () => {
  it("keeps the first reading", () => {
    expect(keepInHistory(null, point(0))).toBe(true);
  });

  it("keeps at most one reading per 10 s on steady mains", () => {
    expect(keepInHistory(point(0), point(1))).toBe(false);
    expect(keepInHistory(point(0), point(9.9, { chargePercent: 99 }))).toBe(false);
    expect(keepInHistory(point(0), point(10))).toBe(true);
  });

  it("keeps every reading on battery", () => {
    const onBattery = { onBattery: true };
    expect(keepInHistory(point(0, onBattery), point(1, onBattery))).toBe(true);
  });

  it("keeps every change of status: battery, low battery, reachability", () => {
    expect(keepInHistory(point(0, { onBattery: true }), point(1))).toBe(true);
    expect(keepInHistory(point(0), point(1, { lowBattery: true }))).toBe(true);
    const lost = { reachable: false, onBattery: null, lowBattery: null };
    expect(keepInHistory(point(0), point(1, lost))).toBe(true);
    expect(keepInHistory(point(1, lost), point(2, lost))).toBe(false);
    expect(keepInHistory(point(1, lost), point(2))).toBe(true);
  });
});
