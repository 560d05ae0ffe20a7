import type { RunSummary } from "@/lib/hosts/list-hosts";
import { isAbortedRun } from "@/lib/pipeline/abort-reason";
import { splitFailure } from "./failure-text";
import { formatElapsed, secondsSince } from "./format";

/** What a host's phase line says, decided apart from how it is drawn. */
export type PhaseLine =
  | { kind: "none"; text: string }
  /** `step · phase · elapsed`, the elapsed part ticking while the step runs. */
  | { kind: "running"; step: string; phase: string | null; elapsed: string; text: string }
  /**
   * What failed and what to do on one line (components/failure-text.ts), prefixed with the step
   * that failed; `output` the raw output the reason quoted, `full` the whole reason.
   */
  | {
      kind: "failed";
      step: string;
      reason: string;
      output: string[];
      full: string;
      text: string;
    }
  /** The operator stopped the run: where it stopped, never a failure. */
  | { kind: "aborted"; step: string; text: string }
  | { kind: "done"; text: string };

type RunFields = Pick<
  RunSummary,
  "status" | "currentStep" | "phase" | "stepStartedAt" | "failureReason" | "failedStep"
> & {
  /** The run's pipeline: what "all steps done" means depends on it (onboarding when unknown). */
  pipeline?: string;
};

/** What a succeeded run of each host pipeline achieved; a power run has its own verdict. */
const DONE_TEXT: Record<string, string> = {
  "onboard-host": "onboarded · all steps done",
  "decommission-host": "decommissioned · all steps done",
  "rotate-console-key": "key rotated · all steps done",
};

export function describePhaseLine(run: RunFields | null, nowMs: number): PhaseLine {
  if (!run) return { kind: "none", text: "no onboarding run yet" };
  switch (run.status) {
    case "running": {
      const elapsed = formatElapsed(secondsSince(run.stepStartedAt, nowMs));
      const parts = [run.currentStep, run.phase, elapsed].filter((p): p is string => !!p);
      return {
        kind: "running",
        step: run.currentStep,
        phase: run.phase,
        elapsed,
        text: parts.join(" · "),
      };
    }
    case "failed": {
      const step = run.failedStep ?? run.currentStep;
      if (isAbortedRun(run))
        return { kind: "aborted", step, text: `${run.failureReason} during ${step}` };
      const { headline: reason, output } = splitFailure(run.failureReason);
      const full = run.failureReason?.trim() || reason;
      return { kind: "failed", step, reason, output, full, text: `${step}: ${reason}` };
    }
    case "succeeded":
      return {
        kind: "done",
        text: DONE_TEXT[run.pipeline ?? "onboard-host"] ?? "finished · all steps done",
      };
  }
}

/** The phase line is one line: a multi-line reason shows its first line (the rest is in the log). */
export function firstLine(text: string | null): string {
  return (
    (text ?? "")
      .split("\n")
      .find((line) => line.trim() !== "")
      ?.trim() ?? ""
  );
}
