import type { runs } from "@/lib/db/schema";
import { isAbortedRun } from "@/lib/pipeline/abort-reason";
import { DECOMMISSION_HOST } from "@/lib/steps/onboarding/decommission/name";

export type HostState =
  "onboarding" | "failed" | "aborted" | "active" | "decommissioning" | "retired";

type RunStatus = (typeof runs.$inferSelect)["status"];

/**
 * A host's state is its latest run's status; it is never stored twice. Two facts refine it:
 * `retired_at` (set by the decommission pipeline's last step) wins over everything, and a
 * running decommission run reads `decommissioning`, not `onboarding`, so nobody mistakes a
 * host being taken out of service for one being brought in. A run an operator aborted reads
 * `aborted`, never `failed`: nothing went wrong, someone chose to stop it.
 */
export function hostStateOf(
  runStatus: RunStatus | null,
  facts: {
    retiredAt?: Date | string | null;
    pipeline?: string | null;
    failureReason?: string | null;
  } = {},
): HostState {
  if (facts.retiredAt) return "retired";
  switch (runStatus) {
    case "succeeded":
      return "active";
    case "failed":
      return isAbortedRun({ status: runStatus, failureReason: facts.failureReason })
        ? "aborted"
        : "failed";
    default:
      return facts.pipeline === DECOMMISSION_HOST && runStatus === "running"
        ? "decommissioning"
        : "onboarding";
  }
}
