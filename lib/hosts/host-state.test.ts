import { describe, expect, it } from "vitest";
import { DECOMMISSION_HOST } from "@/lib/steps/onboarding/decommission/name";
import { hostStateOf } from "./host-state";

describe("hostStateOf", () => {
  it("is the latest run's status: running → onboarding, succeeded → active, failed → failed", () => {
    expect(hostStateOf(null)).toBe("onboarding");
    expect(hostStateOf("running", { pipeline: "onboard-host" })).toBe("onboarding");
    expect(hostStateOf("succeeded")).toBe("active");
    expect(hostStateOf("failed", { pipeline: DECOMMISSION_HOST })).toBe("failed");
  });

  it("a running decommission run reads decommissioning, not onboarding", () => {
    expect(hostStateOf("running", { pipeline: DECOMMISSION_HOST })).toBe("decommissioning");
  });

  it("retired_at wins over every run status", () => {
    for (const status of [null, "running", "succeeded", "failed"] as const) {
      expect(hostStateOf(status, { retiredAt: "2026-11-30T06:00:00Z" })).toBe("retired");
    }
  });
});
