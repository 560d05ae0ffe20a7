import { describe, expect, it } from "vitest";
import { DEFAULT_CONSOLIDATE_SETTINGS } from "@/lib/power/clusters/schemas";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import type { TargetRecord } from "@/lib/power/targets/load-targets";
import { buildPlan, groupIndexes, orderTargets, shutdownBudgetSeconds } from "./plan";

const t = (name: string, stage: number, runsConsole = false) => ({ name, stage, runsConsole });

describe("the shutdown order", () => {
  it("goes by stage, then name, with the console's host last whatever its stage", () => {
    const ordered = orderTargets([
      t("zeta", 0),
      t("console", 0, true),
      t("alpha", 2),
      t("beta", 0),
    ]);
    expect(ordered.map((x) => x.name)).toEqual(["beta", "zeta", "alpha", "console"]);
  });

  it("groups each stage, and the console's host alone at the end", () => {
    const ordered = orderTargets([t("a", 0), t("b", 0), t("c", 1), t("console", 1, true)]);
    expect(groupIndexes(ordered)).toEqual([0, 0, 1, 2]);
  });

  it("budgets every group's call deadline plus the time to go down", () => {
    expect(shutdownBudgetSeconds(3, { callTimeoutSeconds: 10, targetDownSeconds: 180 })).toBe(210);
    expect(shutdownBudgetSeconds(0, { callTimeoutSeconds: 10, targetDownSeconds: 180 })).toBe(0);
  });
});

describe("the plan with a cluster", () => {
  const record = (id: string, name: string, over: Partial<TargetRecord> = {}): TargetRecord => ({
    id,
    kind: "pve-node",
    name,
    stage: 0,
    runsConsole: false,
    enabled: true,
    feedPolicy: "any",
    feeds: [{ upsId: "u1", upsName: "ups" }],
    endpoint: null,
    problem: "test record",
    ...over,
  });
  const clusterNode = (name: string, cephMon: boolean) => ({
    name,
    ip: null,
    online: true,
    cephMon,
    hostId: `h-${name}`,
    targetId: `t-${name}`,
  });
  const group: ClusterGroup = {
    id: "c1",
    name: "prod",
    label: "prod",
    policy: "cluster",
    chosenPolicy: "cluster",
    policyNote: null,
    membership: null,
    ambiguity: null,
    hyperConverged: true,
    quorate: true,
    nodes: [clusterNode("pve1", true), clusterNode("pve2", false)],
    refreshedAt: null,
    refreshError: null,
    consolidate: DEFAULT_CONSOLIDATE_SETTINGS,
    consolidateCheck: null,
  };
  const records = [
    record("t-pve1", "pve1"),
    record("t-pve2", "pve2"),
    record("t-solo", "solo", { stage: 1 }),
    record("t-console", "console-host", { runsConsole: true }),
  ];
  const due = new Map(records.map((r) => [r.id, "2026-12-01T00:00:00.000Z"]));
  const settings = {
    mode: "dry-run" as const,
    shutdown: {
      callTimeoutSeconds: 10,
      targetDownSeconds: 180,
      guestTimeoutSeconds: 120,
      guestParallelism: 8,
      consoleGuest: null,
    },
  };

  it("standalone first, then the cluster's nodes in its order, the console's standalone host after every cluster", () => {
    const plan = buildPlan(records, due, settings, new Date(), [group]);
    expect(plan.targets.map((t) => [t.name, t.group, t.cluster, t.afterClusters])).toEqual([
      ["solo", 0, null, false],
      ["pve2", 1, "c1", false],
      ["pve1", 2, "c1", false],
      ["console-host", 3, null, true],
    ]);
    expect(plan.clusters.map((c) => c.nodes.map((n) => n.name))).toEqual([["pve2", "pve1"]]);
    // The standalone groups (solo, then the console's host) and the cluster's own steps.
    expect(plan.budgetSeconds).toBe(
      shutdownBudgetSeconds(2, settings.shutdown) + plan.clusters[0]!.budgetSeconds,
    );
  });

  it("a per-host cluster is ordered like standalone hosts", () => {
    const plan = buildPlan(records, due, settings, new Date(), [{ ...group, policy: "per-host" }]);
    expect(plan.clusters).toEqual([]);
    expect(plan.targets.map((t) => t.name)).toEqual(["pve1", "pve2", "solo", "console-host"]);
    expect(plan.targets.every((t) => t.cluster === null && !t.afterClusters)).toBe(true);
  });
});
