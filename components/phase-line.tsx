"use client";

import type { RunSummary } from "@/lib/hosts/list-hosts";
import { FailureOutput } from "./failure-output";
import { describePhaseLine } from "./phase-line-format";
import { useNow } from "./use-now";

type RunFields = Pick<
  RunSummary,
  "status" | "currentStep" | "phase" | "stepStartedAt" | "failureReason" | "failedStep"
> & { pipeline?: string };

/** A finished run's own one-line verdict (a power run's), in place of the generic words. */
export type RunOutcomeLine = { tone: string; text: string };

/**
 * `step · phase · elapsed` for a running host (elapsed ticks every second), the failed step and
 * its one-line reason (what failed, what to do) for a failed one. `outcome` replaces the words of
 * a finished run (a power run says what it shut down); `withOutput` puts the raw output the
 * reason quoted one click away; `brief` says only where a failed run stopped (a header that sits
 * under the full reason).
 */
export function PhaseLine({
  run,
  testId,
  outcome,
  withOutput = false,
  brief = false,
}: {
  run: RunFields | null;
  testId?: string;
  outcome?: RunOutcomeLine | null;
  withOutput?: boolean;
  brief?: boolean;
}) {
  const now = useNow();
  const line = describePhaseLine(run, now);
  if (outcome && run && run.status !== "running") {
    return (
      <span
        className={`phase-line phase-outcome phase-outcome-${outcome.tone}`}
        data-testid={testId}
        data-tone={outcome.tone}
      >
        {outcome.text}
      </span>
    );
  }
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
      if (brief) {
        return (
          <span className="phase-line phase-failed" data-testid={testId}>
            failed at <span className="phase-step">{line.step}</span>
          </span>
        );
      }
      return (
        <span
          className="phase-line phase-failed"
          data-testid={testId}
          title={withOutput ? undefined : line.full}
        >
          <span className="phase-step">{line.step}</span>
          {": "}
          <span data-testid="failure-reason">{line.reason}</span>
          {withOutput && <FailureOutput lines={line.output} />}
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
