import { describe, expect, it } from "vitest";
import type { ClusterSequencePlan } from "@/lib/power/clusters/sequence-plan";
import { buildPowerBackPlan } from "@/lib/power/power-back/back-plan";
import type { RecordedGuest } from "@/lib/power/records/guests-before";
import type { PlannedTarget, ShutdownPlan } from "@/lib/power/shutdown/shutdown-plan";
import { asCompletedRun } from "./way-back-preview";

/**
 * The way back beside the shutdown in the plan preview: the shutdown the preview shows, as a run
 * that did every step would leave it, through PlanPowerBack's own buildPowerBackPlan.
 */

const ups = { upsId: "00000000-0000-4000-8000-0000000000aa", upsName: "ups1" };

function target(id: string, name: string, stage: number, hostId: string | null): PlannedTarget {
  return {
    id,
    kind: hostId ? "pve-node" : "pbs",
    name,
    stage,
    runsConsole: false,
    enabled: true,
    feedPolicy: "any",
    feeds: [ups],
    endpoint: hostId
      ? {
          kind: "pve-node",
          hostId,
          address: "192.0.2.1",
          apiPort: 8006,
          nodeName: name,
          apiCertSha256: "00",
          apiTokenId: "root@pam!console",
          apiTokenCredentialId: "c",
        }
      : null,
    problem: null,
    dueSince: "2026-12-05T00:00:00.000Z",
    group: 0,
    request: null,
    deadlineSeconds: 60,
    cluster: null,
    afterClusters: false,
  } as PlannedTarget;
}

function cluster(
  steps: string[],
  partial: ClusterSequencePlan["partial"] = null,
): ClusterSequencePlan {
  return {
    clusterId: "00000000-0000-4000-8000-0000000000c1",
    name: "c1",
    hyperConverged: true,
    apiNodes: ["pve1", "pve2", "pve3"],
    // Shutdown order: the nodes without a monitor first, then the monitors.
    nodes: [
      { name: "pve1", targetId: "t1", role: "other" },
      { name: "pve2", targetId: "t2", role: "monitor" },
      { name: "pve3", targetId: "t3", role: "monitor" },
    ],
    consoleGuest: null,
    guestTimeoutSeconds: 60,
    guestParallelism: 4,
    steps: steps.map((step) => ({ step, seconds: 10, what: step })),
    budgetSeconds: 10 * steps.length,
    warnings: [],
    consolidate: null,
    partial,
  } as ClusterSequencePlan;
}

function plan(clusters: ClusterSequencePlan[]): ShutdownPlan {
  return {
    mode: "dry-run",
    plannedAt: "2026-12-05T00:00:00.000Z",
    targets: [
      target("t1", "pve1", 1, "h1"),
      target("t2", "pve2", 1, "h2"),
      target("t3", "pve3", 1, "h3"),
      target("s1", "solo", 2, "h4"),
      target("s2", "solo-late", 5, "h5"),
      target("b1", "backup", 9, null),
    ],
    clusters,
    groups: 1,
    callTimeoutSeconds: 10,
    targetDownSeconds: 60,
    budgetSeconds: 120,
  };
}

const guest = (vmid: number, node: string, order: number | null, up: number | null) =>
  ({
    id: vmid,
    runId: "r",
    dueSince: new Date(0),
    targetId: null,
    clusterId: null,
    node,
    state: "running",
    vmid,
    type: "qemu",
    name: null,
    startupOrder: order,
    upSeconds: up,
    haManaged: false,
    problem: null,
    mode: "dry-run",
    recordedAt: new Date(0),
  }) as RecordedGuest;

const backOf = (p: ShutdownPlan, guests: RecordedGuest[] = []) =>
  buildPowerBackPlan({
    runs: [asCompletedRun(p)],
    guests,
    mode: "dry-run",
    guestParallelism: 4,
    now: new Date(0),
  });

describe("the way back beside the shutdown", () => {
  it("powers on the cluster's monitors first (the reverse of their shutdown), then its other nodes, standalone hosts by stage descending, the backup server last", () => {
    const back = backOf(plan([cluster(["DisarmHa", "StopClusterGuests", "SetCephFlags"])]));
    expect(back.hosts.map((h) => h.name)).toEqual([
      "pve3",
      "pve2",
      "pve1",
      "solo-late",
      "solo",
      "backup",
    ]);
    expect(back.hosts.map((h) => h.hostId)).toEqual(["h3", "h2", "h1", "h5", "h4", null]);
  });

  it("restores what the sequence changes: HA where it disarms HA, the full set of Ceph flags where it sets them", () => {
    const back = backOf(plan([cluster(["DisarmHa", "StopClusterGuests", "SetCephFlags"])]));
    expect(back.clusters).toEqual([
      {
        clusterId: "00000000-0000-4000-8000-0000000000c1",
        name: "c1",
        nodes: ["pve3", "pve2", "pve1"],
        cephFlags: ["noout", "nobackfill", "norecover", "norebalance"],
        haDisarmed: true,
      },
    ]);
  });

  it("restores nothing the sequence leaves alone, and only noout after a partial outage", () => {
    expect(backOf(plan([cluster(["StopClusterGuests"])])).clusters[0]).toMatchObject({
      cephFlags: [],
      haDisarmed: false,
    });
    const partial = backOf(plan([cluster(["SetCephFlags"], { staying: ["pve4"] })]));
    expect(partial.clusters[0]!.cephFlags).toEqual(["noout"]);
  });

  it("takes the recorded guests as the run would: every one once, whatever order they were listed in", () => {
    const back = backOf(plan([]), [
      guest(120, "pve2", null, null),
      guest(101, "pve1", 2, 30),
      guest(102, "pve1", 1, null),
      guest(101, "pve1", 2, 30),
    ]);
    expect(back.guests.map((g) => [g.vmid, g.startupOrder, g.upSeconds])).toEqual([
      [120, null, null],
      [101, 2, 30],
      [102, 1, null],
    ]);
  });
});
