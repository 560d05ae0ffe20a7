import { describe, expect, it } from "vitest";
import { decommissionPlan } from "./decommission-plan";

const host = {
  name: "pve-07",
  address: "10.0.0.7",
  sshUser: "root",
  proxmox: {
    nodeName: "pve07",
    apiPort: 8006,
    apiCertSha256: null,
    apiTokenId: "clupilot@pve!console",
  },
  latestRun: null,
};

describe("decommissionPlan: what the confirmation dialog lists", () => {
  it("names the run to abort, the token and node, root's authorized_keys, retirement and the secrets", () => {
    const running = {
      ...host,
      latestRun: {
        id: "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f",
        status: "running",
        currentStep: "BuildVmTemplate",
      },
    } as unknown as Parameters<typeof decommissionPlan>[0];
    expect(decommissionPlan(running)).toEqual([
      "Abort the running run 0b7c6f1e (at BuildVmTemplate) and wait until it has stopped.",
      "Remove the console's API token clupilot@pve!console from node pve07 (pveum over SSH, that token only).",
      "Remove the console's SSH key (lines ending in clupilot-console@…) from root's ~/.ssh/authorized_keys on 10.0.0.7; every other line stays.",
      "Mark pve-07 retired: no new runs, no template checks; its runs, logs and events stay readable.",
      "Delete the console's secrets for this host: the SSH password or key it stored, and the API token's secret.",
    ]);
  });

  it("says so when there is nothing to abort and no token recorded", () => {
    const plan = decommissionPlan({
      ...host,
      proxmox: { ...host.proxmox, apiTokenId: null },
    } as Parameters<typeof decommissionPlan>[0]);
    expect(plan[0]).toBe("No run is running: nothing to abort.");
    expect(plan[1]).toMatch(/^No API token is recorded for this host/);
  });

  it("for a member of a cluster the console made: leaving the cluster, and the cluster's token and keys kept", () => {
    const plan = decommissionPlan({
      ...host,
      proxmox: { ...host.proxmox, cluster: { mode: "join", name: "prod" } },
    } as unknown as Parameters<typeof decommissionPlan>[0]);
    expect(plan).toHaveLength(5);
    expect(plan[1]).toBe(
      "Take node pve07 out of cluster prod: refused while it holds guests or the cluster's quorum needs it; otherwise shut it down, remove it on a member that stays (pvecm delnode pve07) with its leftovers in /etc/pve/nodes/pve07, and check the cluster is quorate without it.",
    );
    expect(plan[2]).toMatch(/^Keep the cluster's console API token and root's authorized_keys/);
    expect(plan.join("\n")).not.toContain("Remove the console's API token");
  });
});
