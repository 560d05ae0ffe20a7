import type { AnyPipeline } from "@/lib/pipeline/step";
import { rotateConsoleKeyPipeline } from "@/lib/console-key/rotation/pipeline";
import { powerShutdownPipeline } from "@/lib/power/shutdown/pipeline";
import { onboardHostPipeline } from "./host";
import { decommissionHostPipeline } from "./host/decommission";

/** Every pipeline this version of the console can run, by the name stored on the run. */
export const pipelines: Readonly<Record<string, AnyPipeline>> = {
  [onboardHostPipeline.name]: onboardHostPipeline,
  [rotateConsoleKeyPipeline.name]: rotateConsoleKeyPipeline,
  [decommissionHostPipeline.name]: decommissionHostPipeline,
  [powerShutdownPipeline.name]: powerShutdownPipeline,
};
