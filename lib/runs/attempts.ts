import type { events, stepVisits } from "@/lib/db/schema";

export const RUN_RETRIED = "run.retried";

type Visit = Pick<typeof stepVisits.$inferSelect, "step" | "startedAt" | "finishedAt" | "outcome">;
type RetryEvent = Pick<typeof events.$inferSelect, "at" | "actor" | "message" | "data">;

/** One attempt at a step: the visits between entering it (or a Retry) and its end. */
export type StepAttempt = {
  /** The Retry that began this attempt; null for the first one. */
  retry: { by: string; at: string } | null;
  state: "running" | "done" | "failed" | "aborted";
  visits: number;
  startedAt: string | null;
  finishedAt: string | null;
  /** This attempt alone: the time the run sat failed waiting for a Retry is in none of them. */
  durationSeconds: number | null;
};

/** The step a Retry re-entered: recorded in its data, or named in its message (older rows). */
export function retriedStep(event: Pick<RetryEvent, "message" | "data">): string | null {
  const step = event.data?.step;
  if (typeof step === "string") return step;
  return /^retry of (\S+)/.exec(event.message)?.[1] ?? null;
}

/**
 * A step's visits cut at each Retry of it (issue 19: a retried step that then succeeded read
 * "failed", its duration counting the wait for the operator). Every attempt but the last ended
 * failed — that is what made the Retry possible; the last one is in the step's state.
 */
export function splitAttempts(
  visits: readonly Visit[],
  retries: readonly RetryEvent[],
  step: string,
  stepState: "pending" | "running" | "done" | "failed" | "aborted",
  runStepStartedAt: Date,
): StepAttempt[] {
  const cuts = retries.filter((r) => retriedStep(r) === step);
  const attempts: StepAttempt[] = [];
  const bounds: { retry: RetryEvent | null; from: Date | null }[] = [
    { retry: null, from: null },
    ...cuts.map((retry) => ({ retry, from: retry.at })),
  ];
  bounds.forEach((bound, index) => {
    const until = bounds[index + 1]?.from ?? null;
    const own = visits.filter(
      (v) =>
        (bound.from === null || v.startedAt >= bound.from) &&
        (until === null || v.startedAt < until),
    );
    const isLast = index === bounds.length - 1;
    const state: StepAttempt["state"] = !isLast
      ? "failed"
      : stepState === "pending"
        ? "running"
        : stepState;
    if (isLast && stepState === "pending" && own.length === 0) return;
    const first = own[0];
    const last = own[own.length - 1];
    const start =
      first?.startedAt ?? (state === "running" ? (bound.from ?? runStepStartedAt) : null);
    const end = state === "running" ? null : (last?.finishedAt ?? null);
    attempts.push({
      retry: bound.retry ? { by: bound.retry.actor, at: bound.retry.at.toISOString() } : null,
      state,
      visits: own.length,
      startedAt: start?.toISOString() ?? null,
      finishedAt: end?.toISOString() ?? null,
      durationSeconds: start && end ? (end.getTime() - start.getTime()) / 1000 : null,
    });
  });
  return attempts;
}
