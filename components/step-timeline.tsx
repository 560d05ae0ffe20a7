"use client";

import type { StepAttempt } from "@/lib/runs/attempts";
import type { StepState, TimelineStep } from "@/lib/runs/get-run";
import { formatDateTime, formatElapsed, secondsSince } from "./format";
import { firstLine } from "./phase-line-format";
import { useNow } from "./use-now";

const LOOK: Record<StepState, { icon: string; label: string }> = {
  pending: { icon: "○", label: "pending" },
  running: { icon: "◐", label: "running" },
  done: { icon: "✓", label: "done" },
  failed: { icon: "✕", label: "failed" },
  aborted: { icon: "■", label: "aborted" },
};

/**
 * Every step of the pipeline in order: state, duration (live while running), visits, failure;
 * a retried step lists each attempt with its own duration and the Retry between them.
 */
export function StepTimeline({ steps, phase }: { steps: TimelineStep[]; phase: string | null }) {
  return (
    <ol className="timeline" data-testid="step-timeline">
      {steps.map((step, index) => (
        <TimelineItem key={step.name} step={step} index={index} phase={phase} />
      ))}
    </ol>
  );
}

function TimelineItem({
  step,
  index,
  phase,
}: {
  step: TimelineStep;
  index: number;
  phase: string | null;
}) {
  const { icon, label } = LOOK[step.state];
  return (
    <li
      className={`timeline-step step-${step.state}`}
      data-testid={`step-${step.name}`}
      data-state={step.state}
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
        <div className="step-meta">
          <StepDuration step={step} />
          {step.visits > 1 && (
            <span title="How often the engine visited this step (polls and retries count).">
              {step.visits} visits
            </span>
          )}
        </div>
        {step.attempts.length > 1 && <Attempts attempts={step.attempts} />}
        {step.state === "failed" && step.failureReason && (
          <p className="step-failure" data-testid="failure-reason">
            <span aria-hidden="true">✕ </span>
            {firstLine(step.failureReason)}
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
            attempt.durationSeconds !== null && ` · ${formatElapsed(attempt.durationSeconds)}`
          )}
        </li>
      ))}
    </ol>
  );
}

function StepDuration({ step }: { step: TimelineStep }) {
  if (step.state === "running" && step.startedAt)
    return <LiveDuration startedAt={step.startedAt} />;
  if (step.durationSeconds !== null) return <span>{formatElapsed(step.durationSeconds)}</span>;
  return null;
}

function LiveDuration({ startedAt }: { startedAt: string }) {
  const now = useNow();
  return (
    <span data-testid="step-duration" suppressHydrationWarning>
      {formatElapsed(secondsSince(startedAt, now))}
    </span>
  );
}
