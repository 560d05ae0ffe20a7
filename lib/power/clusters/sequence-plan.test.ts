import { describe, expect, it } from "vitest";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import { DEFAULT_CONSOLIDATE_SETTINGS } from "@/lib/power/clusters/schemas";
import { consolidationOf } from "@/lib/power/clusters/remaining-node";
import { acceptsParameter, pveApiMethod } from "@/test/fixtures/proxmox/api-schema";
import { ClusterApi, CLUSTER_SEQUENCE_REQUESTS } from "./sequence-api";
import {
  CEPH_FLAGS_WAIT_SECONDS,
  FORCE_STOP_SECONDS,
  HA_DISARM_WAIT_SECONDS,
  guestRounds,
  planClusterSequence,
  sequencedGroups,
} from "./sequence-plan";

const node = (name: string, cephMon = false, targetId: string | null = `t-${name}`) => ({
  name,
  ip: null,
  online: true,
  cephMon,
  hostId: targetId ? `h-${name}` : null,
  targetId,
  runningGuests: null as number | null,
});

const group = (over: Partial<ClusterGroup> = {}): ClusterGroup => ({
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
  nodes: [node("pve3", true), node("pve1", true), node("pve2"), node("pve4")],
  refreshedAt: null,
  refreshError: null,
  consolidate: DEFAULT_CONSOLIDATE_SETTINGS,
  consolidateCheck: null,
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
    const ceph = planClusterSequence(
      group({ policy: "whole-cluster" }),
      due("pve1", "pve2"),
      settings,
    );
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
    const plain = planClusterSequence(
      group({ hyperConverged: false, policy: "whole-cluster" }),
      due("pve1"),
      settings,
    );
    expect(plain.steps.map((s) => s.step)).not.toContain("SetCephFlags");
  });

  it("counts every round of guest stops at the configured parallelism, from the last refresh's running guests", () => {
    const counted = group({
      policy: "whole-cluster",
      nodes: [
        { ...node("pve1", true), runningGuests: 9 },
        { ...node("pve2"), runningGuests: 8 },
        { ...node("pve3", true), runningGuests: 0 },
        { ...node("pve4"), runningGuests: 0 },
      ],
    });
    const plan = planClusterSequence(counted, due("pve1", "pve2", "pve3", "pve4"), settings);
    const guests = plan.steps.find((s) => s.step === "StopClusterGuests")!;
    // 17 guests, 8 at once: three rounds of 120 s.
    expect(guests.seconds).toBe(10 + 3 * 120 + FORCE_STOP_SECONDS + 10);
    expect(guests.what).toMatch(/17 guest\(s\) running at the last refresh: 3 round\(s\) of 8/);
    expect(guestRounds([{ name: "a", runningGuests: null }], 8)).toEqual({
      rounds: 1,
      guests: null,
    });
    expect(guestRounds([{ name: "a", runningGuests: 0 }], 8)).toEqual({ rounds: 1, guests: 0 });
  });

  it("whole cluster, always: says which nodes stay up while every guest is stopped", () => {
    const plan = planClusterSequence(
      group({ policy: "whole-cluster" }),
      due("pve1", "pve2"),
      settings,
    );
    expect(plan.warnings).toEqual([
      "pve3, pve4 are not shut down by this UPS (not a protected target due now): they keep running, their guests stopped with the rest",
    ]);
    expect(plan.consolidate).toBeNull();
    expect(plan.partial).toBeNull();
  });

  describe("a partial outage (policy cluster, some nodes keep power)", () => {
    it("takes down only the nodes that lost power: their guests, noout, those nodes — HA is not disarmed", () => {
      const plan = planClusterSequence(group(), due("pve1", "pve2"), settings);
      expect(plan.partial).toEqual({ staying: ["pve3", "pve4"] });
      expect(plan.steps.map((s) => s.step)).toEqual([
        "StopClusterGuests",
        "SetCephFlags",
        "ShutDownClusterNodes",
      ]);
      expect(plan.nodes.map((n) => n.name)).toEqual(["pve2", "pve1"]);
      expect(plan.warnings[0]).toMatch(
        /^partial outage: only pve2, pve1 lost power; pve3, pve4 keep running — HA stays armed/,
      );
      expect(plan.budgetSeconds).toBe(
        10 + 120 + FORCE_STOP_SECONDS + 10 + 2 * (10 + CEPH_FLAGS_WAIT_SECONDS) + 2 * (10 + 180),
      );
    });

    it("a node last seen offline does not count as staying; every node due is the whole cluster", () => {
      const offline = group({
        nodes: [{ ...node("pve3", true), online: false }, node("pve1", true), node("pve2")],
      });
      expect(planClusterSequence(offline, due("pve1", "pve2"), settings).partial).toBeNull();
      expect(
        planClusterSequence(group(), due("pve1", "pve2", "pve3", "pve4"), settings).partial,
      ).toBeNull();
    });
  });

  describe("a consolidating cluster", () => {
    const consolidating = group({
      policy: "consolidate",
      hyperConverged: false,
      consolidate: { ...DEFAULT_CONSOLIDATE_SETTINGS, remainingNode: "pve3" },
    });
    const records = ["pve1", "pve2", "pve3", "pve4"].map((n) => ({
      id: `t-${n}`,
      runsConsole: false,
      enabled: true,
    }));
    const input = (over: {
      firstStage?: { at: string; reason: string } | null;
      downAtFirst?: string[];
    }) => ({
      plan: consolidationOf(consolidating, records, null),
      firstStage: over.firstStage ?? null,
      downAtFirst: over.downAtFirst ?? [],
      remainingEndpoint: null,
    });

    it("first stage: checked, HA disarmed, the leaving nodes' guests migrated to the node that stays, those nodes down by name", () => {
      const fired = { at: "2026-01-01T00:00:00.000Z", reason: "runtime 14 min is below 15 min" };
      const plan = planClusterSequence(
        consolidating,
        due("pve4", "pve1", "pve2"),
        settings,
        input({ firstStage: fired }),
      );
      expect(plan.steps.map((s) => s.step)).toEqual([
        "CheckConsolidation",
        "DisarmHa",
        "MigrateGuests",
        "ShutDownClusterNodes",
      ]);
      expect(plan.nodes.map((n) => n.name)).toEqual(["pve1", "pve2", "pve4"]);
      // The node that stays answers the cluster-wide calls: it is up longest.
      expect(plan.apiNodes[0]).toBe("pve3");
      expect(plan.consolidate).toMatchObject({
        stage: "first",
        mode: "migrate",
        remainingNode: "pve3",
        leaving: ["pve1", "pve2", "pve4"],
        fired,
      });
      expect(plan.warnings[0]).toBe(
        "consolidate, first stage (runtime 14 min is below 15 min): migrate the guests of pve1, pve2, pve4 to pve3 and shut those nodes down; pve3 runs until the final threshold",
      );
      const stop = planClusterSequence(
        { ...consolidating, consolidate: { ...consolidating.consolidate, mode: "stop" } },
        due("pve1"),
        settings,
        input({ firstStage: fired }),
      );
      expect(stop.steps.map((s) => s.step)).toContain("StopClusterGuests");
      expect(stop.steps.map((s) => s.step)).not.toContain("MigrateGuests");
    });

    it("final stage: the nodes down since the first threshold are said, not warned about", () => {
      const plan = planClusterSequence(
        consolidating,
        due("pve3"),
        settings,
        input({ downAtFirst: ["pve1", "pve2", "pve4"] }),
      );
      expect(plan.steps.map((s) => s.step)).toEqual([
        "DisarmHa",
        "StopClusterGuests",
        "ShutDownClusterNodes",
      ]);
      expect(plan.nodes.map((n) => n.name)).toEqual(["pve3"]);
      expect(plan.warnings).toEqual([
        "consolidate, final stage: pve1, pve2, pve4 went down at the first threshold and stay down; the nodes still up go down now as one unit",
      ]);
      expect(plan.consolidate).toMatchObject({
        stage: "final",
        downAtFirst: ["pve1", "pve2", "pve4"],
      });
    });

    it("final without a first stage (it fell back, or the trigger came first): the whole cluster as one unit, said", () => {
      const plan = planClusterSequence(
        consolidating,
        due("pve1", "pve2", "pve3", "pve4"),
        settings,
        input({}),
      );
      expect(plan.nodes).toHaveLength(4);
      expect(plan.warnings[0]).toMatch(/^consolidate: no node went down at the first threshold/);
    });
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

  it("migrates with the parameters and the privilege Proxmox's schema gives: a running VM online, a running container restarted", () => {
    for (const type of ["qemu", "lxc"] as const) {
      const method = pveApiMethod("POST", `/nodes/{node}/${type}/{vmid}/migrate`)!;
      expect(method.permissions?.check).toEqual(["perm", "/vms/{vmid}", ["VM.Migrate"]]);
      for (const status of ["running", "stopped"]) {
        const form = ClusterApi.migrateForm({ type, status }, "pve3");
        for (const name of Object.keys(form))
          expect(acceptsParameter(method, name), name).toBe(true);
      }
    }
    expect(ClusterApi.migrateForm({ type: "qemu", status: "running" }, "pve3")).toEqual({
      target: "pve3",
      online: "1",
    });
    expect(ClusterApi.migrateForm({ type: "lxc", status: "running" }, "pve3")).toEqual({
      target: "pve3",
      restart: "1",
    });
    expect(ClusterApi.migrateForm({ type: "qemu", status: "stopped" }, "pve3")).toEqual({
      target: "pve3",
    });
  });
});
