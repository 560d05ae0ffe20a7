import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LabUpsOutput } from "./output";
import { PowerTimeline } from "./timeline";

/*
 * The lab UPS's output under shutdown.return and load.off, on a clock the test moves: 1 nominal
 * second = 10 ms (timeScale 0.01), so ups.delay.shutdown 20 s = 200 ms and ups.delay.start
 * 30 s = 300 ms.
 */

let clock = 0;
let timeline: PowerTimeline;
let output: LabUpsOutput;
let changes: boolean[];

beforeEach(() => {
  vi.useFakeTimers();
  clock = 0;
  timeline = new PowerTimeline({ timeScale: 0.01, now: () => clock });
  output = new LabUpsOutput(timeline);
  changes = [];
  output.onChange((on) => changes.push(on));
});

afterEach(() => {
  output.stop();
  vi.useRealTimers();
});

function advance(ms: number) {
  clock += ms;
  vi.advanceTimersByTime(ms);
}

describe("the lab UPS's output", () => {
  it("shutdown.return on battery: off after ups.delay.shutdown, and stays off until mains is back for ups.delay.start", () => {
    timeline.pullPlug();
    output.command("shutdown.return");
    advance(199);
    expect(output.isOn).toBe(true);
    advance(1);
    expect(output.isOn).toBe(false);
    advance(10_000);
    expect(output.isOn).toBe(false);
    timeline.restore();
    advance(299);
    expect(output.isOn).toBe(false);
    advance(1);
    expect(output.isOn).toBe(true);
    expect(changes).toEqual([false, true]);
    expect(output.events.map((e) => e.what)).toEqual(["command", "output-off", "output-on"]);
  });

  it("mains back before the delay is over: the output still goes off, and returns after ups.delay.start", () => {
    timeline.pullPlug();
    output.command("shutdown.return");
    advance(100);
    timeline.restore();
    advance(100);
    expect(output.isOn).toBe(false);
    advance(300);
    expect(output.isOn).toBe(true);
  });

  it("mains lost again during ups.delay.start: the count starts anew when it returns", () => {
    timeline.pullPlug();
    output.command("shutdown.return");
    advance(200);
    timeline.restore();
    advance(200);
    timeline.pullPlug();
    advance(1000);
    expect(output.isOn).toBe(false);
    timeline.restore();
    advance(299);
    expect(output.isOn).toBe(false);
    advance(1);
    expect(output.isOn).toBe(true);
  });

  it("a second shutdown.return while counting down changes nothing; load.off is off for good", () => {
    timeline.pullPlug();
    output.command("shutdown.return");
    advance(150);
    output.command("shutdown.return");
    advance(50);
    expect(output.isOn).toBe(false);
    output.command("load.off");
    timeline.restore();
    advance(10_000);
    expect(output.isOn).toBe(false);
    expect(changes).toEqual([false]);
  });
});
