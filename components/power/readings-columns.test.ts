import { describe, expect, it } from "vitest";
import type { ReadingPoint } from "@/lib/power/queries/ups-readings";
import { appendReadings, toColumns } from "./readings-columns";

const point = (second: number, over: Partial<ReadingPoint> = {}): ReadingPoint => ({
  at: new Date(Date.UTC(2026, 11, 1, 10, 0, second)).toISOString(),
  reachable: true,
  onBattery: false,
  lowBattery: false,
  chargePercent: 100,
  runtimeSeconds: 1200,
  ...over,
});
const t = (second: number) => Date.UTC(2026, 11, 1, 10, 0, second) / 1000;

describe("the chart's columns", () => {
  it("time in seconds, outage band at 100 only on battery, runtime in minutes, no reading = a gap (never zero)", () => {
    const columns = toColumns([
      point(0),
      point(1, { onBattery: true, chargePercent: 90, runtimeSeconds: 600 }),
      point(2, { reachable: false, onBattery: null, chargePercent: null, runtimeSeconds: null }),
    ]);
    expect(columns.data).toEqual([
      [t(0), t(1), t(2)],
      [null, 100, null],
      [100, 90, null],
      [20, 10, null],
    ]);
    expect(columns.last?.at).toBe(point(2).at);
  });

  it("appends only readings after the last one shown and drops what left the window", () => {
    const shown = toColumns([point(0), point(1), point(2)]);
    const next = appendReadings(
      shown,
      [point(2), point(3, { chargePercent: 95 })],
      Date.UTC(2026, 11, 1, 10, 0, 1),
    );
    expect(next.data[0]).toEqual([t(1), t(2), t(3)]);
    expect(next.data[2]).toEqual([100, 100, 95]);
    expect(next.last?.at).toBe(point(3).at);
    // Nothing new: the same points, the same last one.
    const same = appendReadings(next, [point(3)], Date.UTC(2026, 11, 1, 10, 0, 0));
    expect(same.data[0]).toEqual([t(1), t(2), t(3)]);
    expect(same.last?.at).toBe(point(3).at);
  });
});
