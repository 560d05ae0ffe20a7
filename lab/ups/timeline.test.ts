import { describe, expect, it } from "vitest";

import { PowerTimeline } from "./timeline";

/** A timeline on a clock the test moves: `advance(s)` moves real time by s seconds. */
function timeline(options: ConstructorParameters<typeof PowerTimeline>[0] = {}) {
  let nowMs = 0;
  const line = new PowerTimeline({ ...options, now: () => nowMs });
  return {
    line,
    advance(seconds: number) {
      nowMs += seconds * 1000;
    },
  };
}

describe("the lab UPS's power timeline", () => {
  it("starts on mains, full, with the runtime a full battery gives", () => {
    const { line } = timeline({ drainSeconds: 1800 });
    expect(line.snapshot()).toMatchObject({
      mains: true,
      chargePercent: 100,
      runtimeSeconds: 1800,
      lowBattery: false,
      secondsOnBattery: 0,
    });
  });

  it("drains on battery, runtime falling with the charge, and counts its own time on battery", () => {
    const { line, advance } = timeline({ drainSeconds: 1000 });
    line.pullPlug();
    advance(250);
    expect(line.snapshot()).toMatchObject({
      mains: false,
      chargePercent: 75,
      runtimeSeconds: 750,
      lowBattery: false,
      secondsOnBattery: 250,
    });
  });

  it("reports low battery at the threshold, and keeps it after mains returns until recharged above it", () => {
    const { line, advance } = timeline({
      drainSeconds: 1000,
      rechargeSeconds: 1000,
      lowBatteryPercent: 20,
    });
    line.pullPlug();
    advance(800);
    expect(line.snapshot()).toMatchObject({ chargePercent: 20, lowBattery: true });
    line.restore();
    expect(line.snapshot()).toMatchObject({ mains: true, lowBattery: true, secondsOnBattery: 0 });
    advance(50);
    expect(line.snapshot()).toMatchObject({ chargePercent: 25, lowBattery: false });
  });

  it("never drains below empty nor charges above full", () => {
    const { line, advance } = timeline({ drainSeconds: 100, rechargeSeconds: 100 });
    line.pullPlug();
    advance(1000);
    expect(line.snapshot()).toMatchObject({
      chargePercent: 0,
      runtimeSeconds: 0,
      lowBattery: true,
    });
    line.restore();
    advance(1000);
    expect(line.snapshot().chargePercent).toBe(100);
  });

  it("compresses time: at time scale 0.01 a nominal 1000 s pass in 10 real seconds", () => {
    const { line, advance } = timeline({ drainSeconds: 1000, timeScale: 0.01 });
    line.pullPlug();
    advance(5);
    expect(line.snapshot()).toMatchObject({ chargePercent: 50, secondsOnBattery: 500 });
  });

  it("jumps straight to low battery on battery (the UPS that dies without warning)", () => {
    const { line } = timeline({ lowBatteryPercent: 25 });
    line.jumpToLowBattery();
    expect(line.snapshot()).toMatchObject({ mains: false, chargePercent: 25, lowBattery: true });
  });

  it("keeps an explicit runtime estimate falling in proportion to the charge", () => {
    const { line, advance } = timeline({ drainSeconds: 1000 });
    line.set({ mains: false, chargePercent: 50, runtimeSeconds: 300 });
    advance(250);
    expect(line.snapshot()).toMatchObject({ chargePercent: 25, runtimeSeconds: 150 });
  });

  it("stands still while held, and goes on from there when released", () => {
    const { line, advance } = timeline({ drainSeconds: 1000 });
    line.pullPlug();
    advance(100);
    line.set({ held: true });
    advance(500);
    expect(line.snapshot()).toMatchObject({ chargePercent: 90, secondsOnBattery: 100, held: true });
    line.set({ held: false });
    advance(100);
    expect(line.snapshot()).toMatchObject({ chargePercent: 80, secondsOnBattery: 200 });
  });

  it("starts the UPS's own counter at a stale value on the next outage when told to (PVE-UPS #25)", () => {
    const { line, advance } = timeline();
    line.staleCounterOnNextOutage = 900;
    line.pullPlug();
    advance(3);
    expect(line.snapshot().secondsOnBattery).toBe(903);
    line.restore();
    expect(line.snapshot().secondsOnBattery).toBe(0);
  });

  it("sets forced shutdown as a flag on top of the power state", () => {
    const { line } = timeline();
    line.set({ forcedShutdown: true });
    expect(line.snapshot()).toMatchObject({ mains: true, forcedShutdown: true });
  });
});
