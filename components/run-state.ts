import type { RunDetail } from "@/lib/runs/get-run";

/**
 * Whether the operator already asked this running run to stop: an abort request newer than the
 * last retry. (The request itself lives in its own table; its event is what the run shows.)
 */
export function isAbortRequested(run: Pick<RunDetail, "status" | "events">): boolean {
  if (run.status !== "running") return false;
  for (let i = run.events.length - 1; i >= 0; i--) {
    const kind = run.events[i]?.kind;
    if (kind === "run.abort_requested") return true;
    if (kind === "run.retried") return false;
  }
  return false;
}
