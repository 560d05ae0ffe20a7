import { describe, expect, it } from "vitest";
import { DEFAULT_CONSOLIDATE_SETTINGS } from "@/lib/power/clusters/schemas";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import type { TargetRecord } from "@/lib/power/targets/load-targets";
import { buildPlan, groupIndexes, orderTargets, shutdownBudgetSeconds } from "./shutdown-plan";

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
    runningGuests: null as number | null,
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

  it("two clusters of the same name, told apart or not: their nodes in one order, monitors after the others', the console's node after every other cluster's", () => {
    const twin: ClusterGroup = {
      ...group,
      id: "c2",
      label: "prod (b1, b2)",
      nodes: [
        { ...clusterNode("pve1", true), hostId: "h-b1", targetId: "t-b1" },
        { ...clusterNode("pve2", false), hostId: "h-b2", targetId: "t-b2" },
      ],
      ambiguity:
        "the console cannot tell whether prod (b1, b2) is the same cluster as prod (a1, a2)",
    };
    const first: ClusterGroup = { ...group, label: "prod (a1, a2)" };
    const all = [...records, record("t-b1", "b1"), record("t-b2", "b2")];
    const dueAll = new Map(all.map((r) => [r.id, "2026-12-01T00:00:00.000Z"]));
    const plan = buildPlan(
      all,
      dueAll,
      {
        ...settings,
        shutdown: { ...settings.shutdown, consoleGuest: { node: "pve1", vmid: 100 } },
      },
      new Date(),
      [first, twin],
    );
    // The console's guest runs on pve1 of both (the node name is all the setting says): both
    // pve1 go last; every monitor after every plain node.
    expect(plan.targets.filter((t) => t.cluster).map((t) => [t.name, t.cluster])).toEqual([
      ["pve2", "c1"],
      ["b2", "c2"],
      ["pve1", "c1"],
      ["b1", "c2"],
    ]);
    expect(plan.clusters.map((c) => c.name)).toEqual(["prod (a1, a2)", "prod (b1, b2)"]);
    expect(plan.clusters[1]!.warnings[0]).toMatch(
      /^AMBIGUOUS: the console cannot tell .* Fail-safe: it goes down as one unit through its own hosts/,
    );
    expect(plan.clusters[0]!.warnings.join("\n")).not.toMatch(/AMBIGUOUS/);
    expect(plan.clusters[0]!.warnings.join("\n")).toMatch(
      /the console's guest is set on node pve1, a node name prod \(a1, a2\) and prod \(b1, b2\) both have/,
    );
  });
});
