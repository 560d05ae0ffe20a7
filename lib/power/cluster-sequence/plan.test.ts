import { describe, expect, it } from "vitest";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import { pveApiMethod } from "@/test/fixtures/proxmox/api-schema";
import { CLUSTER_SEQUENCE_REQUESTS } from "./cluster-api";
import {
  CEPH_FLAGS_WAIT_SECONDS,
  FORCE_STOP_SECONDS,
  HA_DISARM_WAIT_SECONDS,
  planClusterSequence,
  sequencedGroups,
} from "./plan";

const node = (name: string, cephMon = false, targetId: string | null = `t-${name}`) => ({
  name,
  ip: null,
  online: true,
  cephMon,
  hostId: targetId ? `h-${name}` : null,
  targetId,
});

const group = (over: Partial<ClusterGroup> = {}): ClusterGroup => ({
  id: "c1",
  name: "prod",
  policy: "cluster",
  hyperConverged: true,
  quorate: true,
  nodes: [node("pve3", true), node("pve1", true), node("pve2"), node("pve4")],
  refreshedAt: null,
  refreshError: null,
  ...over,
});

const due = (...names: string[]) =>
  names.map((n) => ({ id: `t-${n}`, name: n, runsConsole: false, kind: "pve-node" as const }));

const settings = {
  callTimeoutSeconds: 10,
  targetDownSeconds: 180,
  guestTimeoutSeconds: 120,
  guestParallelism: 8,
  consoleGuest: null,
};

describe("the cluster sequence plan", () => {
  it("orders nodes without a monitor first, then monitors, the console's node last", () => {
    const plan = planClusterSequence(group(), due("pve1", "pve2", "pve3", "pve4"), {
      ...settings,
      consoleGuest: { node: "pve1", vmid: 500 },
    });
    expect(plan.nodes.map((n) => [n.name, n.role])).toEqual([
      ["pve2", "plain"],
      ["pve4", "plain"],
      ["pve3", "monitor"],
      ["pve1", "console"],
    ]);
    // Cluster-wide calls go to the nodes that stay up longest.
    expect(plan.apiNodes[0]).toBe("pve1");
    expect(plan.consoleGuest).toEqual({ node: "pve1", vmid: 500 });
  });

  it("takes the console's node from its target mark as well", () => {
    const targets = due("pve2", "pve4");
    targets[1]!.runsConsole = true;
    const plan = planClusterSequence(group(), targets, settings);
    expect(plan.nodes.map((n) => n.name)).toEqual(["pve2", "pve4"]);
    expect(plan.nodes[1]!.role).toBe("console");
  });

  it("budgets every step one after another; Ceph only when hyper-converged", () => {
    const ceph = planClusterSequence(group(), due("pve1", "pve2"), settings);
    expect(ceph.steps.map((s) => s.step)).toEqual([
      "DisarmHa",
      "StopClusterGuests",
      "SetCephFlags",
      "ShutDownClusterNodes",
    ]);
    expect(ceph.budgetSeconds).toBe(
      10 +
        HA_DISARM_WAIT_SECONDS +
        (10 + 120 + FORCE_STOP_SECONDS + 10) +
        2 * (10 + CEPH_FLAGS_WAIT_SECONDS) +
        2 * (10 + 180),
    );
    const plain = planClusterSequence(group({ hyperConverged: false }), due("pve1"), settings);
    expect(plain.steps.map((s) => s.step)).not.toContain("SetCephFlags");
  });

  it("says which nodes stay up and that consolidate is not built", () => {
    const plan = planClusterSequence(
      group({ policy: "consolidate" }),
      due("pve1", "pve2"),
      settings,
    );
    expect(plan.warnings).toEqual([
      "policy 'consolidate' is not built yet: this cluster is shut down as one unit instead",
      "pve3, pve4 are not shut down by this UPS (not a protected target due now): they keep running, their guests stopped with the rest",
    ]);
  });

  it("sequences clusters by policy with a due node; per-host ones are left to the standalone order", () => {
    const dueIds = new Set(["t-pve1"]);
    expect(sequencedGroups([group()], dueIds)).toHaveLength(1);
    expect(sequencedGroups([group({ policy: "per-host" })], dueIds)).toEqual([]);
    expect(sequencedGroups([group()], new Set(["t-other"]))).toEqual([]);
  });

  it("sends only requests Proxmox's published schema has, each allowed for an API token", () => {
    for (const request of CLUSTER_SEQUENCE_REQUESTS) {
      const [method, template] = request.split(" ") as [string, string];
      expect(pveApiMethod(method, template)?.allowtoken, request).toBe(true);
    }
  });
});
