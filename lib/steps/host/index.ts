import { definePipeline } from "@/lib/pipeline/step";
import { checkOperatingSystem } from "./check-operating-system";
import { connectHost } from "./connect-host";
import { createHostServices, type HostServices } from "./services";

/** THE onboarding order: the one place it lives. */
export const onboardHostPipeline = definePipeline<HostServices>({
  name: "onboard-host",
  steps: [connectHost, checkOperatingSystem()],
  services: (run, db) => createHostServices(db, run),
});
