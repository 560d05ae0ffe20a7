import type { AnyPipeline } from "@/lib/pipeline/step";
import { rotateConsoleKeyPipeline } from "@/lib/console-key/rotation/pipeline";
import { powerBackPipeline } from "@/lib/power/power-back-pipeline/pipeline";
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
  [onboardHostPipeline.name]: onboardHostPipeline,
  [rotateConsoleKeyPipeline.name]: rotateConsoleKeyPipeline,
  [decommissionHostPipeline.name]: decommissionHostPipeline,
  [powerShutdownPipeline.name]: powerShutdownPipeline,
  [powerBackPipeline.name]: powerBackPipeline,
};
