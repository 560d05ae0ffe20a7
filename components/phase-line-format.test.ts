import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import { describe, expect, it } from "vitest";
import { describePhaseLine, firstLine } from "./phase-line-format";

const started = "2025-01-01T10:00:00.000Z";
const at = (seconds: number) => Date.parse(started) + seconds * 1000;
const run = {
  status: "running" as const,
  currentStep: "CheckOperatingSystem",
  phase: null as string | null,
  stepStartedAt: started,
  failureReason: null as string | null,
  failedStep: null as string | null,
};

describe("describePhaseLine", () => {
  it("reads step · phase · elapsed for a running step", () => {
    const line = describePhaseLine({ ...run, phase: "customise image" }, at(125));
    expect(line).toMatchObject({
      kind: "running",
      text: "CheckOperatingSystem · customise image · 2m 05s",
    });
  });
  it("leaves the phase out when the step reported none", () => {
    expect(describePhaseLine(run, at(9)).text).toBe("CheckOperatingSystem · 9s");
  });
  it("shows the failed step and the one-line failure reason for a failed run", () => {
    const line = describePhaseLine(
      {
        ...run,
        status: "failed",
        failedStep: "ConnectHost",
        failureReason: "SSH refused\nmore detail",
      },
      at(0),
    );
    expect(line).toEqual({
      kind: "failed",
      step: "ConnectHost",
      reason: "SSH refused",
      output: ["more detail"],
      full: "SSH refused\nmore detail",
      text: "ConnectHost: SSH refused",
    });
  });
  it("falls back to the current step when the failed step is not recorded", () => {
    const line = describePhaseLine(
      { ...run, status: "failed", failureReason: "dpkg was interrupted" },
      at(0),
    );
    expect(line.text).toBe("CheckOperatingSystem: dpkg was interrupted");
  });
  it("an aborted run reads as aborted where it stopped, not as a failure", () => {
    const line = describePhaseLine(
      { ...run, status: "failed", failedStep: "ConfigureProxmox", failureReason: ABORT_REASON },
      at(0),
    );
    expect(line).toEqual({
      kind: "aborted",
      step: "ConfigureProxmox",
      text: "aborted by operator during ConfigureProxmox",
    });
  });
  it("says the host is onboarded when the run succeeded", () => {
    expect(describePhaseLine({ ...run, status: "succeeded" }, at(0))).toEqual({
      kind: "done",
      text: "onboarded · all steps done",
    });
  });
  it("says what a succeeded run achieved by its pipeline, never onboarding's words for another", () => {
    const done = (pipeline: string) =>
      describePhaseLine({ ...run, status: "succeeded", pipeline }, at(0)).text;
    expect(done("decommission-host")).toBe("decommissioned · all steps done");
    expect(done("power-shutdown")).not.toContain("onboarded");
  });
  it("says so when there is no run", () => {
    expect(describePhaseLine(null, at(0)).kind).toBe("none");
  });
});

describe("firstLine", () => {
  it("skips leading blank lines and trims", () => {
    expect(firstLine("\n  boom  \nsecond")).toBe("boom");
    expect(firstLine(null)).toBe("");
  });
});
