"use client";

import type { RunSummary } from "@/lib/hosts/list-hosts";
import { describePhaseLine } from "./phase-line-format";
import { useNow } from "./use-now";

type RunFields = Pick<
  RunSummary,
  "status" | "currentStep" | "phase" | "stepStartedAt" | "failureReason" | "failedStep"
>;

/**
 * `step · phase · elapsed` for a running host (elapsed ticks every second), the failed step and
 * its one-line reason for a failed one.
 */
export function PhaseLine({ run, testId }: { run: RunFields | null; testId?: string }) {
  const now = useNow();
  const line = describePhaseLine(run, now);
  switch (line.kind) {
    case "running":
      return (
        <span className="phase-line phase-running" data-testid={testId}>
          <span className="phase-step">{line.step}</span>
          {line.phase && (
            <>
              <span className="sep" aria-hidden="true">
                {" · "}
              </span>
              <span className="phase-phase">{line.phase}</span>
            </>
          )}
          <span className="sep" aria-hidden="true">
            {" · "}
          </span>
          <span className="phase-elapsed" suppressHydrationWarning>
            {line.elapsed}
          </span>
        </span>
      );
    case "failed":
      return (
        <span className="phase-line phase-failed" data-testid={testId} title={line.full}>
          <span className="phase-step">{line.step}</span>
          {": "}
          <span data-testid="failure-reason">{line.reason}</span>
        </span>
      );
    case "aborted":
      return (
        <span className="phase-line phase-aborted" data-testid={testId}>
          <span data-testid="abort-result">{line.text}</span>
        </span>
      );
    default:
      return (
        <span className={`phase-line phase-${line.kind}`} data-testid={testId}>
          {line.text}
        </span>
      );
  }
}
