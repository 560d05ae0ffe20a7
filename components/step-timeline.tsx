"use client";

import type { StepAttempt } from "@/lib/runs/attempts";
import type { StepState, TimelineStep } from "@/lib/runs/get-run";
import { splitFailure } from "./failure-text";
import { formatDateTime, formatElapsed, secondsSince } from "./format";
import { useNow } from "./use-now";

/**
 * What a step shows: the engine's state, or — for a step that advanced without doing what its
 * name says — skipped (nothing to do: no cluster, dry-run) or dry-run (it only recorded what it
 * would do). Neither is ever drawn with done's tick.
 */
export type ShownStepState = StepState | "skipped" | "dry-run";

/** How a step the engine calls done is to be shown instead, with the words that say why. */
export type StepVerdict = { state: "skipped" | "dry-run"; note: string };

const LOOK: Record<ShownStepState, { icon: string; label: string }> = {
  pending: { icon: "○", label: "pending" },
  running: { icon: "◐", label: "running" },
  done: { icon: "✓", label: "done" },
  failed: { icon: "✕", label: "failed" },
  aborted: { icon: "■", label: "aborted" },
  skipped: { icon: "–", label: "skipped" },
  "dry-run": { icon: "◌", label: "dry-run" },
};

/**
 * Every step of the pipeline in order: state, duration (live while running), failure; a retried
 * step lists each attempt with its own duration and the Retry between them. `verdicts` (a power
 * run's) say which done steps were skipped or only dry-run. `failureReasons: false` leaves a
 * failed step's reason to the phase line above it (one place, not two).
 */
export function StepTimeline({
  steps,
  phase,
  verdicts = {},
  failureReasons = true,
}: {
  steps: TimelineStep[];
  phase: string | null;
  verdicts?: Readonly<Record<string, StepVerdict>>;
  failureReasons?: boolean;
}) {
  return (
    <ol className="timeline" data-testid="step-timeline">
      {steps.map((step, index) => (
        <TimelineItem
          key={step.name}
          step={step}
          index={index}
          phase={phase}
          verdict={step.state === "done" ? (verdicts[step.name] ?? null) : null}
          failureReason={failureReasons}
        />
      ))}
    </ol>
  );
}

function TimelineItem({
  step,
  index,
  phase,
  verdict,
  failureReason,
}: {
  step: TimelineStep;
  index: number;
  phase: string | null;
  verdict: StepVerdict | null;
  failureReason: boolean;
}) {
  const shown: ShownStepState = verdict?.state ?? step.state;
  const { icon } = LOOK[shown];
  const label = verdict?.note ?? LOOK[shown].label;
  return (
    <li
      className={`timeline-step step-${shown}`}
      data-testid={`step-${step.name}`}
      data-state={shown}
      aria-current={step.state === "running" ? "step" : undefined}
    >
      <span className="step-icon" aria-hidden="true">
        {icon}
      </span>
      <div className="step-main">
        <div className="step-head">
          <span className="step-number">{index + 1}.</span>
          <span className="step-name">{step.name}</span>
          <span className="step-state" data-testid="step-state">
            {label}
          </span>
          {step.state === "running" && phase && <span className="step-phase">{phase}</span>}
        </div>
        {!verdict && (
          <div className="step-meta">
            <StepDuration step={step} />
          </div>
        )}
        {step.attempts.length > 1 && <Attempts attempts={step.attempts} />}
        {failureReason && step.state === "failed" && step.failureReason && (
          <p className="step-failure" data-testid="failure-reason">
            <span aria-hidden="true">✕ </span>
            {splitFailure(step.failureReason).headline}
          </p>
        )}
      </div>
    </li>
  );
}

function Attempts({ attempts }: { attempts: StepAttempt[] }) {
  return (
    <ol className="step-attempts" data-testid="step-attempts">
      {attempts.map((attempt, index) => (
        <li key={index} data-testid="step-attempt" data-state={attempt.state}>
          {attempt.retry && (
            <span className="step-retry" data-testid="step-retry">
              ↻ Retry by {attempt.retry.by} at{" "}
              <time dateTime={attempt.retry.at} suppressHydrationWarning>
                {formatDateTime(attempt.retry.at)}
              </time>
              {" · "}
            </span>
          )}
          attempt {index + 1}: {LOOK[attempt.state].label}
          {attempt.state === "running" && attempt.startedAt ? (
            <>
              {" · "}
              <LiveDuration startedAt={attempt.startedAt} />
            </>
          ) : (
            attempt.durationSeconds !== null && (
              <span className="nowrap">{` · ${formatElapsed(attempt.durationSeconds)}`}</span>
            )
          )}
        </li>
      ))}
    </ol>
  );
}

function StepDuration({ step }: { step: TimelineStep }) {
  if (step.state === "running" && step.startedAt)
    return <LiveDuration startedAt={step.startedAt} />;
  if (step.durationSeconds !== null)
    return <span className="nowrap">{formatElapsed(step.durationSeconds)}</span>;
  return null;
}

function LiveDuration({ startedAt }: { startedAt: string }) {
  const now = useNow();
  return (
    <span className="nowrap" data-testid="step-duration" suppressHydrationWarning>
      {formatElapsed(secondsSince(startedAt, now))}
    </span>
  );
}
