import { describe, expect, it } from "vitest";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import { DEFAULT_POWER_SETTINGS } from "@/lib/power/config/settings";
import {
  latchReleaseWarning,
  readingAge,
  timeOnBattery,
  triggerSummary,
  upsHeadline,
  upsWarning,
} from "./ups-card-text";

const NOW = Date.parse("2026-12-01T10:10:00Z");
const card = (over: Partial<UpsCard> = {}): UpsCard => ({
  id: "u1",
  name: "ups1",
  source: "NUT ups1@10.0.0.9:3493",
  sourceType: "nut",
  condition: "on-battery",
  reachable: true,
  lastReading: {
    at: "2026-12-01T10:09:59Z",
    onBattery: true,
    lowBattery: false,
    chargePercent: 80,
    runtimeSeconds: 660,
    rawStatus: "OB",
  },
  onBatterySince: "2026-12-01T10:07:55Z",
  alarm: null,
  latch: null,
  pending: null,
  watchedUntil: "2026-12-01T10:10:04Z",
  triggers: DEFAULT_POWER_SETTINGS.triggers,
  outputCycle: false,
  ...over,
});

describe("UPS card text", () => {
  it("time on battery runs from the console's outage start; none on mains", () => {
    expect(timeOnBattery(card(), NOW)).toBe("2m 05s");
    expect(timeOnBattery(card({ onBatterySince: null, condition: "on-mains" }), NOW)).toBeNull();
    expect(readingAge(card(), NOW)).toBe("1s ago");
  });

  it("a fresh reading from a watched UPS carries no warning", () => {
    expect(upsWarning(card(), NOW, 1000)).toBeNull();
    expect(upsHeadline(card())).toEqual({ text: "On battery", tone: "warning" });
    expect(upsHeadline(card({ condition: "low-battery" })).tone).toBe("critical");
  });

  it("nobody watching comes first: a lapsed lease, or a UPS no worker picked up", () => {
    expect(upsWarning(card({ watchedUntil: "2026-12-01T10:08:00Z" }), NOW, 1000)).toMatch(
      /lease ran out 2m 00s ago/,
    );
    expect(upsWarning(card({ watchedUntil: null }), NOW, 1000)).toMatch(/No worker has picked/);
  });

  it("an alarm says why and what the UPS last said, never 'on mains' as if current", () => {
    const warning = upsWarning(
      card({
        condition: "no-reading",
        alarm: { since: "2026-12-01T10:09:30Z", reason: "upsd answered ERR DATA-STALE" },
        lastReading: { ...card().lastReading!, at: "2026-12-01T10:09:00Z", onBattery: false },
      }),
      NOW,
      1000,
    );
    expect(warning).toBe(
      "upsd answered ERR DATA-STALE (since 30s). Last reliable reading 1m 00s ago: on mains.",
    );
    expect(upsHeadline(card({ condition: "no-reading" })).text).toBe("No reliable reading");
  });

  it("a reading older than five polls (at least 10 s) is called out as stale", () => {
    const old = card({ lastReading: { ...card().lastReading!, at: "2026-12-01T10:09:45Z" } });
    expect(upsWarning(old, NOW, 1000)).toMatch(/last reading is 15s ago/);
    expect(upsWarning(old, NOW, 5000)).toBeNull();
  });

  it("the trigger summary lists what would fire, and says so when nothing would", () => {
    expect(triggerSummary(DEFAULT_POWER_SETTINGS.triggers)).toBe(
      "low battery (LB) · runtime < 5m 00s · charge < 30 % · on battery ≥ 10m 00s",
    );
    expect(
      triggerSummary({
        ...DEFAULT_POWER_SETTINGS.triggers,
        lowBattery: false,
        runtimeBelowSeconds: null,
        chargeBelowPercent: null,
        onBatteryForSeconds: null,
      }),
    ).toBe("no trigger is on");
  });
});

describe("the release-latch dialog's words (issue 29, item 15)", () => {
  const latched = (over: Partial<UpsCard> = {}) =>
    card({
      condition: "low-battery",
      lastReading: {
        ...card().lastReading!,
        lowBattery: true,
        chargePercent: 12,
        rawStatus: "OB LB",
      },
      latch: { trigger: "low_battery", at: "2026-12-01T10:09:00Z", reason: "LB", dormant: false },
      ...over,
    });
  const plan = {
    groups: [
      { ups: { id: "u1" }, targets: [{ name: "pve1" }, { name: "pve2" }] },
      { ups: { id: "u2" }, targets: [{ name: "other" }] },
    ],
  } as unknown as Parameters<typeof latchReleaseWarning>[2];

  it("on battery: the UPS's current state and the targets its trigger shuts down again, from the plan", () => {
    expect(latchReleaseWarning(latched(), "armed", plan)).toBe(
      "UPS ups1 is still on battery (OB LB, 12 %): releasing the latch lets the trigger fire again within seconds and shut down pve1 and pve2 again.",
    );
    expect(latchReleaseWarning(latched(), "armed", null)).toMatch(
      /shut down the targets it feeds again\.$/,
    );
  });

  it("no reliable reading now: what the UPS was last seen doing", () => {
    expect(latchReleaseWarning(latched({ condition: "no-reading" }), "armed", plan)).toMatch(
      /^UPS ups1 was last seen on battery \(OB LB, 12 %\) and gives no reliable reading now: /,
    );
  });

  it("on mains: no warning, the release needs no acknowledgement", () => {
    const onMains = latched({
      condition: "on-mains",
      lastReading: { ...card().lastReading!, onBattery: false, rawStatus: "OL CHRG" },
    });
    expect(latchReleaseWarning(onMains, "armed", plan)).toBeNull();
  });
});
