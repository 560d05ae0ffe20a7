import { definePipeline } from "@/lib/pipeline/step";
import { planShutdown } from "./plan-shutdown";
import { createPowerServices, type PowerServices } from "./services";
import { shutDownTargets } from "./shut-down-targets";
import { verifyTargetsDown } from "./verify-targets-down";

export const POWER_SHUTDOWN = "power-shutdown";

/**
 * The shutdown of standalone targets when the power runs out: a run on the engine (live phase
 * line, log, timeline, Abort), started by the power monitor, ticking on the power runner so it
 * never waits behind onboarding.
 */
export const powerShutdownPipeline = definePipeline<PowerServices>({
  name: POWER_SHUTDOWN,
  queue: "power",
  steps: [planShutdown, shutDownTargets, verifyTargetsDown],
  services: createPowerServices,
});
