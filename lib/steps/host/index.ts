import { definePipeline } from "@/lib/pipeline/step";
import { checkOperatingSystem } from "./check-operating-system";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { connectHost } from "./connect-host";
import { createHostServices, type HostServices } from "./services";

export const ONBOARD_HOST = "onboard-host";

/** THE onboarding order: the one place it lives. */
export function createOnboardHostPipeline(config: OnboardingConfig) {
  return definePipeline<HostServices>({
    name: ONBOARD_HOST,
    steps: [connectHost, checkOperatingSystem(config)],
    services: (run, db) => createHostServices(db, run, config),
  });
}

/** The pipeline as configured by this process's environment (worker, web). */
export const onboardHostPipeline = createOnboardHostPipeline(onboardingConfigFromEnv());
