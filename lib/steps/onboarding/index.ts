import { definePipeline, type Step } from "@/lib/pipeline/step";
import { applySubscription } from "./apply-subscription";
import { buildVmTemplate } from "./build-vm-template";
import { checkOperatingSystem } from "./check-operating-system";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { createCluster, joinCluster } from "./cluster-membership";
import { configureProxmox } from "./configure-proxmox";
import { connectHost } from "./connect-host";
import { createApiToken } from "./create-api-token";
import { installProxmoxKernel } from "./install-proxmox-kernel";
import { installProxmoxRepository } from "./install-proxmox-repository";
import { installProxmoxVe } from "./install-proxmox-ve";
import { prepareHostname } from "./prepare-hostname";
import { rebootIntoPveKernel } from "./reboot-into-pve-kernel";
import { registerCapacity } from "./register-capacity";
import { createHostServices, type HostServices } from "./services";
import { verifyProxmoxApi } from "./verify-proxmox-api";
import { verifyVmTemplate } from "./verify-vm-template";

export const ONBOARD_HOST = "onboard-host";

/** THE onboarding order (docs/pipeline.md, "Onboarding"): the one place it lives. */
export function onboardingSteps(config: OnboardingConfig): Step<HostServices>[] {
  return [
    connectHost,
    checkOperatingSystem(config),
    prepareHostname,
    installProxmoxRepository(config),
    installProxmoxKernel(),
    rebootIntoPveKernel(config),
    installProxmoxVe(),
    configureProxmox,
    // Before CreateApiToken: joining replaces /etc/pve, a token made before would be gone.
    createCluster,
    joinCluster,
    createApiToken,
    verifyProxmoxApi,
    // Needs Proxmox VE (pvesh); InstallProxmoxRepository installed it from no-subscription, this
    // applies the host's key (if any) and switches it to the enterprise repository.
    applySubscription(config),
    // After VerifyProxmoxApi (it asks the API), before VerifyVmTemplate and RegisterCapacity
    // (its storage fix must have happened before capacity is counted).
    buildVmTemplate(config),
    verifyVmTemplate,
    registerCapacity,
  ];
}

export function createOnboardHostPipeline(
  config: OnboardingConfig,
  options: { steps?: Step<HostServices>[] } = {},
) {
  return definePipeline<HostServices>({
    name: ONBOARD_HOST,
    steps: options.steps ?? onboardingSteps(config),
    services: (run, db, resources) => createHostServices(db, run, config, resources),
  });
}

/** The pipeline as configured by this process's environment (worker, web). */
export const onboardHostPipeline = createOnboardHostPipeline(onboardingConfigFromEnv());
