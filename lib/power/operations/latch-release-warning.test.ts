import { describe, expect, it } from "vitest";
import {
  releaseDuringOutageWarning,
  releaseIsDuringOutage,
  type LatchReleaseState,
} from "./latch-release-warning";

const state = (over: Partial<LatchReleaseState> = {}): LatchReleaseState => ({
  upsName: "rack-a",
  reading: { onBattery: true, rawStatus: "OB LB", chargePercent: 12.4 },
  readingIsCurrent: true,
  mode: "armed",
  targets: ["pve1", "pve2", "pbs"],
  ...over,
});

describe("the warning before releasing a latch during an outage", () => {
  it("on battery and armed: names the UPS's state, that the trigger fires again within seconds, and what it shuts down again", () => {
    expect(releaseDuringOutageWarning(state())).toBe(
      "UPS rack-a is still on battery (OB LB, 12 %): releasing the latch lets the trigger fire again within seconds and shut down pve1, pve2 and pbs again.",
    );
    expect(releaseDuringOutageWarning(state({ targets: ["pve1"] }))).toMatch(
      /and shut down pve1 again\.$/,
    );
  });

  it("in dry-run it says nothing is really shut down; without a charge reading it shows the status alone", () => {
    expect(
      releaseDuringOutageWarning(
        state({
          mode: "dry-run",
          reading: { onBattery: true, rawStatus: "OB DISCHRG", chargePercent: null },
        }),
      ),
    ).toBe(
      "UPS rack-a is still on battery (OB DISCHRG): releasing the latch lets the trigger fire again within seconds and start another dry-run shutdown of pve1, pve2 and pbs (dry-run: nothing is really shut down).",
    );
  });

  it("targets not known here (the page without the plan): 'the targets it feeds'; none: says nothing would be shut down", () => {
    expect(releaseDuringOutageWarning(state({ targets: null }))).toMatch(
      /and shut down the targets it feeds again\.$/,
    );
    expect(releaseDuringOutageWarning(state({ targets: [] }))).toMatch(
      /fire again within seconds — it feeds no target now, so nothing would be shut down\.$/,
    );
  });

  it("last seen on battery, no reliable reading now: says so", () => {
    expect(releaseDuringOutageWarning(state({ readingIsCurrent: false }))).toMatch(
      /^UPS rack-a was last seen on battery \(OB LB, 12 %\) and gives no reliable reading now: releasing the latch lets the trigger fire again as soon as it reads on battery again/,
    );
  });

  it("on mains, or never read: no outage, no warning", () => {
    const onMains = state({ reading: { onBattery: false, rawStatus: "OL", chargePercent: 90 } });
    expect(releaseIsDuringOutage(onMains)).toBe(false);
    expect(releaseDuringOutageWarning(onMains)).toBeNull();
    expect(releaseIsDuringOutage(state({ reading: null }))).toBe(false);
    expect(releaseDuringOutageWarning(state({ reading: null }))).toBeNull();
  });
});
