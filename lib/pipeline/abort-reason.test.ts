import { describe, expect, it } from "vitest";

import type { PowerRunSummary } from "@/lib/power/queries/timeline";
import { ABORT_REASON, isAbortedRun, runOutcome } from "./abort-reason";

/** A row of the power runs list as `listPowerRuns` hands it to the page. */
function shutdownRun(over: Partial<PowerRunSummary>): PowerRunSummary {
  return {
    id: "00000000-0000-4000-8000-000000000001",
    kind: "shutdown",
    status: "running",
    phase: null,
    failureReason: null,
    createdAt: "2026-12-01T12:00:00.000Z",
    finishedAt: null,
    origin: {
      kind: "outage",
      upsName: "ups1",
      trigger: "runtime",
      reason: "runtime 240 s < 300 s",
    },
    verdict: { tone: "running", text: "planning the shutdown" },
    actionCount: 0,
    outcomes: {},
    ...over,
  };
}

describe("runOutcome: the label the power runs list shows", () => {
  it("labels a shutdown run the operator aborted 'aborted', not 'failed'", () => {
    const run = shutdownRun({ status: "failed", failureReason: ABORT_REASON });
    expect(isAbortedRun(run)).toBe(true);
    expect(runOutcome(run)).toBe("aborted");
  });

  it("keeps 'failed' for a run that failed for any other reason, even one mentioning an abort", () => {
    for (const failureReason of [
      "PlanShutdown: no plan",
      `${ABORT_REASON} during ShutDownTargets`,
      "Aborted by operator",
      null,
    ]) {
      const run = shutdownRun({ status: "failed", failureReason });
      expect(isAbortedRun(run), String(failureReason)).toBe(false);
      expect(runOutcome(run), String(failureReason)).toBe("failed");
    }
  });

  it("passes running and succeeded through unchanged, whatever the reason field holds", () => {
    expect(runOutcome(shutdownRun({ status: "running" }))).toBe("running");
    expect(runOutcome(shutdownRun({ status: "succeeded" }))).toBe("succeeded");
    expect(runOutcome(shutdownRun({ status: "succeeded", failureReason: ABORT_REASON }))).toBe(
      "succeeded",
    );
  });
});
