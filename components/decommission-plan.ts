import type { HostDetail } from "@/lib/hosts/get-host";

/**
 * What decommissioning this host will do, one sentence per step, in the pipeline's order
 * (lib/steps/onboarding/decommission): the confirmation dialog shows exactly this list.
 */
export function decommissionPlan(
  host: Pick<HostDetail, "name" | "address" | "sshUser" | "proxmox" | "latestRun">,
): string[] {
  const run = host.latestRun;
  const node = host.proxmox.nodeName ?? host.address;
  return [
    run?.status === "running"
      ? `Abort the running run ${run.id.slice(0, 8)} (at ${run.currentStep}) and wait until it has stopped.`
      : "No run is running: nothing to abort.",
    host.proxmox.apiTokenId
      ? `Remove the console's API token ${host.proxmox.apiTokenId} from node ${node} (pveum over SSH, that token only).`
      : "No API token is recorded for this host: nothing to remove on the Proxmox side.",
    `Remove the console's SSH key (lines ending in clupilot-console@…) from ${host.sshUser}'s ~/.ssh/authorized_keys on ${host.address}; every other line stays.`,
    `Mark ${host.name} retired: no new runs, no template checks; its runs, logs and events stay readable.`,
    "Delete the console's secrets for this host: the SSH password or key it stored, and the API token's secret.",
  ];
}
