import type { AnyPipeline } from "@/lib/pipeline/step";
import { requestClusterRefreshAfterRun } from "@/lib/power/cluster-refresh/refresh-task";
import { rotateConsoleKeyPipeline } from "@/lib/console-key/rotation/pipeline";
import { powerBackPipeline } from "@/lib/power/power-back-pipeline/pipeline";
import { powerShedBackPipeline, powerShedPipeline } from "@/lib/power/shed-pipeline/pipeline";
import { powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import { onboardHostPipeline } from "@/lib/steps/onboarding";
import { decommissionHostPipeline } from "@/lib/steps/onboarding/decommission";

/**
 * Every pipeline this version of the console can run, by the name stored on the run: what the
 * worker runs and what a run's page lists its steps from. It names the pipelines of lib/steps,
 * lib/console-key and lib/power, so it sits above all of them; whatever below needs it takes it
 * as a parameter (getRun, getHost).
 */
export const pipelines: Readonly<Record<string, AnyPipeline>> = {
  [onboardHostPipeline.name]: withClusterRefresh(onboardHostPipeline),
  [rotateConsoleKeyPipeline.name]: rotateConsoleKeyPipeline,
  [decommissionHostPipeline.name]: withClusterRefresh(decommissionHostPipeline),
  [powerShutdownPipeline.name]: powerShutdownPipeline,
  [powerBackPipeline.name]: powerBackPipeline,
  [powerShedPipeline.name]: powerShedPipeline,
  [powerShedBackPipeline.name]: powerShedBackPipeline,
};

/**
 * A host pipeline whose success can change a cluster's members (onboarding creates or joins
 * one, a decommission takes a member out) and power's cluster groups with it: power asks the
 * hosts again as soon as it ends (issue 31, item 8). Wired here because lib/steps sits below
 * lib/power and must not know it.
 */
export function withClusterRefresh<P extends AnyPipeline>(pipeline: P): P {
  return {
    ...pipeline,
    async onSucceeded(tx, run) {
      await pipeline.onSucceeded?.(tx, run);
      await requestClusterRefreshAfterRun(tx, run.hostId);
    },
  };
}
