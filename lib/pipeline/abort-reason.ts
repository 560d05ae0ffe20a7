/**
 * The failure reason an operator's Abort ends a run with. A run with it is `aborted`, not
 * `failed`: the operator chose to stop it (issue 19) — everything that shows a run's or a
 * host's state reads it through `isAbortedRun`, and the engine writes exactly this text.
 */
export const ABORT_REASON = "aborted by operator";

export type RunOutcome = "running" | "succeeded" | "failed" | "aborted";

/** How a run reads to a person: its status, with an operator's Abort apart from failures. */
export function runOutcome(run: {
  status: "running" | "succeeded" | "failed";
  failureReason: string | null | undefined;
}): RunOutcome {
  return isAbortedRun(run) ? "aborted" : run.status;
}

export function isAbortedRun(run: {
  status: string | null;
  failureReason: string | null | undefined;
}): boolean {
  return run.status === "failed" && run.failureReason === ABORT_REASON;
}
