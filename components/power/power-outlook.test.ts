import { describe, expect, it } from "vitest";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import { DEFAULT_POWER_SETTINGS } from "@/lib/power/config/settings";
import { powerOutlook as outlookOf } from "./power-outlook";

/** The outlook with its durations' unbreakable spaces as plain ones, to read in a test. */
const powerOutlook = (...args: Parameters<typeof outlookOf>) => {
  const outlook = outlookOf(...args);
  return { ...outlook, text: outlook.text.replaceAll("\u00a0", " ") };
};

const NOW = Date.parse("2026-12-01T10:10:00Z");
const group = { targets: [{ name: "pve1" }, { name: "pve2" }] } as Parameters<
  typeof powerOutlook
>[0];
const triggers = {
  ...DEFAULT_POWER_SETTINGS.triggers,
  lowBattery: true,
  runtimeBelowSeconds: 300,
  chargeBelowPercent: 30,
  onBatteryForSeconds: 600,
};
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
    chargePercent: 22,
    runtimeSeconds: 500,
    rawStatus: "OB",
  },
  onBatterySince: "2026-12-01T10:08:00Z",
  alarm: null,
  latch: null,
  pending: null,
  watchedUntil: "2026-12-01T10:10:04Z",
  triggers,
  outputCycle: false,
  ...over,
});

describe("powerOutlook: what will happen and when", () => {
  it("never breaks inside a duration", () => {
    expect(outlookOf(group, card(), "armed", NOW).text).toContain("3m\u00a020s");
  });

  it("on battery: the names, the time to the first trigger that can be timed, and why", () => {
    expect(powerOutlook(group, card(), "armed", NOW)).toEqual({
      tone: "warning",
      text: "on battery: pve1 and pve2 shut down in 3m 20s (when runtime < 5m 00s), sooner if charge < 30 % or the UPS says low battery",
    });
  });

  it("the on-battery clock wins when it comes first; dry-run says nothing is sent", () => {
    const long = card({
      lastReading: { ...card().lastReading!, runtimeSeconds: 3600 },
      onBatterySince: "2026-12-01T10:01:00Z",
    });
    expect(powerOutlook(group, long, "dry-run", NOW).text).toBe(
      "on battery: pve1 and pve2 would shut down (dry-run) in 1m 00s (after 10m 00s on battery), sooner if charge < 30 % or the UPS says low battery",
    );
  });

  it("on mains: which conditions would shut what down", () => {
    const mains = card({
      condition: "on-mains",
      onBatterySince: null,
      lastReading: { ...card().lastReading!, onBattery: false, rawStatus: "OL" },
    });
    expect(powerOutlook(group, mains, "armed", NOW)).toEqual({
      tone: "ok",
      text: "on mains; on battery, pve1 and pve2 shut down when runtime < 5m 00s or charge < 30 % or after 10m 00s on battery or on the UPS's low battery",
    });
  });

  it("a fired trigger, a confirming one, a dormant one and no reading each say so", () => {
    const latch = {
      trigger: "charge" as const,
      at: "2026-12-01T10:09:00Z",
      reason: "charge 22 % < 30 %",
    };
    expect(
      powerOutlook(group, card({ latch: { ...latch, dormant: false } }), "armed", NOW).text,
    ).toBe("trigger fired: pve1 and pve2 are being shut down");
    expect(
      powerOutlook(
        group,
        card({ pending: { trigger: "charge", reason: "charge 22 % < 30 %", since: latch.at } }),
        "armed",
        NOW,
      ).text,
    ).toBe(
      "charge 22 % < 30 %: confirming — pve1 and pve2 shut down within seconds unless mains returns",
    );
    expect(
      powerOutlook(
        group,
        card({
          condition: "on-mains",
          lastReading: { ...card().lastReading!, onBattery: false },
          latch: { ...latch, dormant: true },
        }),
        "armed",
        NOW,
      ).text,
    ).toMatch(/dormant: mains came back\)$/);
    expect(powerOutlook(group, card({ condition: "no-reading" }), "armed", NOW)).toEqual({
      tone: "critical",
      text: "no reliable reading: pve1 and pve2 are not shut down on a guess",
    });
  });

  it("a UPS that feeds nothing says so", () => {
    expect(powerOutlook({ targets: [] }, card(), "armed", NOW).text).toBe(
      "feeds no protected target: nothing is shut down",
    );
  });
});
