import type { RunDetail } from "@/lib/runs/get-run";

/** Whether the operator already asked this running run to stop. */
export function isAbortRequested(run: Pick<RunDetail, "status" | "abortRequestedAt">): boolean {
  return run.status === "running" && run.abortRequestedAt !== null;
}
