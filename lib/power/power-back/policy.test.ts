import { describe, expect, it } from "vitest";
import { ZPowerBackSettingsChange } from "@/lib/power/config/settings";
import { decidePowerBack, type FeedFacts } from "./policy";

const now = new Date("2026-12-05T12:00:00Z");
const settings = { mainsStableMinutes: 5, minChargePercent: 50 };

const feed = (over: Partial<FeedFacts> = {}): FeedFacts => ({
  upsId: "u1",
  name: "ups-a",
  reachable: true,
  readingAt: new Date(now.getTime() - 1000),
  onBattery: false,
  mainsMs: 5 * 60_000,
  chargePercent: 80,
  runtimeSeconds: 1200,
  ...over,
});

const decide = (feeds: FeedFacts[], budgetSeconds = 300) =>
  decidePowerBack({ feeds, settings, budgetSeconds, now });

describe("the power-back policy", () => {
  it("holds with every feed on mains for N minutes, charged to X % and runtime for the shutdown", () => {
    expect(decide([feed(), feed({ upsId: "u2", name: "ups-b" })])).toMatchObject({ holds: true });
  });

  it("waits for N minutes of stable mains, by the monotonic duration", () => {
    expect(decide([feed({ mainsMs: 5 * 60_000 - 1 })])).toMatchObject({
      holds: false,
      newOutage: false,
      waitingFor: expect.stringContaining("on mains for 5 min"),
    });
  });

  it("waits for the charge and for runtime that covers the shutdown plan again", () => {
    expect(decide([feed({ chargePercent: 49.9 })])).toMatchObject({
      holds: false,
      waitingFor: expect.stringContaining("charged to 50 %"),
    });
    expect(decide([feed({ runtimeSeconds: 299 })], 300)).toMatchObject({
      holds: false,
      waitingFor: expect.stringContaining("runtime"),
    });
    expect(decide([feed({ runtimeSeconds: null })])).toMatchObject({ holds: false });
  });

  it("one feed on battery is a new outage, whatever the others say", () => {
    expect(decide([feed(), feed({ upsId: "u2", onBattery: true, mainsMs: null })])).toMatchObject({
      holds: false,
      newOutage: true,
    });
  });

  it("a stale, unreliable or missing reading is no evidence of mains", () => {
    expect(decide([feed({ readingAt: new Date(now.getTime() - 31_000) })])).toMatchObject({
      holds: false,
      newOutage: false,
    });
    expect(decide([feed({ reachable: false })])).toMatchObject({ holds: false });
    expect(decide([feed({ readingAt: null })])).toMatchObject({ holds: false });
    expect(decide([])).toMatchObject({ holds: false });
  });
});

describe("the power-back settings", () => {
  it("refuses hostile input with field errors", () => {
    for (const bad of [
      { mainsStableMinutes: 0 },
      { mainsStableMinutes: 1.5 },
      { mainsStableMinutes: "5; DROP TABLE" },
      { minChargePercent: 101 },
      { minChargePercent: -1 },
      { minChargePercent: Number.NaN },
      { other: 1 },
    ]) {
      const parsed = ZPowerBackSettingsChange.safeParse(bad);
      expect(parsed.success, JSON.stringify(bad)).toBe(false);
      expect(parsed.error!.issues.length).toBeGreaterThan(0);
    }
    expect(ZPowerBackSettingsChange.parse({ mainsStableMinutes: 1 })).toEqual({
      mainsStableMinutes: 1,
    });
  });
});
