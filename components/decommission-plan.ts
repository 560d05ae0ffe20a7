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
  const cluster = host.proxmox.cluster?.name ?? null;
  const abort =
    run?.status === "running"
      ? `Abort the running run ${run.id.slice(0, 8)} (at ${run.currentStep}) and wait until it has stopped.`
      : "No run is running: nothing to abort.";
  if (cluster) {
    // A member leaves its cluster; what lives in the cluster's shared /etc/pve stays for the
    // members that remain (lib/steps/onboarding/decommission/leave-cluster.ts).
    return [
      abort,
      `Take node ${node} out of cluster ${cluster}: refused while it holds guests or the cluster's quorum needs it; otherwise shut it down, remove it on a member that stays (pvecm delnode ${node}) with its leftovers in /etc/pve/nodes/${node}, and check the cluster is quorate without it.`,
      `Keep the cluster's console API token and root's authorized_keys (they are the cluster's, used by the members that stay); ${node} stays shut down — reinstall it before it is used again.`,
      `Mark ${host.name} retired: no new runs, no template checks; its runs, logs and events stay readable.`,
      "Delete the console's secrets for this host: the SSH password or key it stored, and the API token's secret.",
    ];
  }
  return [
    abort,
    host.proxmox.apiTokenId
      ? `Remove the console's API token ${host.proxmox.apiTokenId} from node ${node} (pveum over SSH, that token only).`
      : "No API token is recorded for this host: nothing to remove on the Proxmox side.",
    `Remove the console's SSH key (lines ending in clupilot-console@…) from ${host.sshUser}'s ~/.ssh/authorized_keys on ${host.address}; every other line stays.`,
    `Mark ${host.name} retired: no new runs, no template checks; its runs, logs and events stay readable.`,
    "Delete the console's secrets for this host: the SSH password or key it stored, and the API token's secret.",
  ];
}
