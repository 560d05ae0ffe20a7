import { definePipeline, type Step } from "@/lib/pipeline/step";
import { onboardingConfigFromEnv, type OnboardingConfig } from "../config";
import { createHostServices, type HostServices } from "../services";
import { abortActiveRun } from "./abort-active-run";
import { leaveCluster } from "./leave-cluster";
import { markRetired } from "./mark-retired";
import { DECOMMISSION_HOST } from "./name";
import { removeApiToken } from "./remove-api-token";
import { removeConsoleKey } from "./remove-console-key";

export { DECOMMISSION_HOST } from "./name";

/**
 * THE decommission order: stop any run first (it could be creating the token we remove), a
 * cluster member leaves its cluster (or the decommission is refused), the token before the key (removing the key can end the console's access), retired last. Each
 * host-side step is best effort: what it could not do is its result, and the pipeline goes on.
 */
export const decommissionSteps: readonly Step<HostServices>[] = [
  abortActiveRun,
  // Before anything is removed: its refusals (guests, quorum) must leave the host as it was.
  leaveCluster,
  removeApiToken,
  removeConsoleKey,
  markRetired,
];

export function createDecommissionHostPipeline(config: OnboardingConfig) {
  return definePipeline<HostServices>({
    name: DECOMMISSION_HOST,
    steps: decommissionSteps,
    services: (run, db, resources) => createHostServices(db, run, config, resources),
  });
}

export const decommissionHostPipeline = createDecommissionHostPipeline(onboardingConfigFromEnv());
