import { z } from "zod";
import type { PowerMode } from "@/lib/power/config/settings";
import {
  PARTIAL_OUTAGE_CEPH_FLAGS,
  type ClusterSequencePlan,
} from "@/lib/power/clusters/sequence-plan";
import { SHUTDOWN_CEPH_FLAGS } from "@/lib/power/clusters/sequence-api";
import type { RecordedGuest } from "@/lib/power/records/guests-before";
import { ZDrillMark } from "@/lib/power/shutdown/drill-mark";
import type { ShutdownPlan } from "@/lib/power/shutdown/shutdown-plan";
import type { PbsEndpoint, PveEndpoint } from "@/lib/power/targets/load-targets";

/** What starts a `power-back` run: who, and the shutdown runs of the outage it undoes. */
export const ZPowerBackInput = z.object({
  by: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("admin"), name: z.string() }),
    z.object({ kind: z.literal("monitor"), why: z.string() }),
  ]),
  shutdownRunIds: z.array(z.uuid()).min(1),
  /**
   * The way back of a drill (lib/power/drill/start-drill-way-back.ts): its one shutdown run is
   * the drill's, and the mark is the drill's own (a dry drill's way back is dry whatever the
   * mode; a live one follows the console's). Never set for an outage's way back.
   */
  drill: ZDrillMark.optional(),
  /**
   * The early-shedding runs of the outage (lib/power/shed/): their guests went down before the
   * shutdown and start again with the rest.
   */
  shedRunIds: z.array(z.uuid()).default([]),
});
export type PowerBackInput = z.input<typeof ZPowerBackInput>;

/** Whether a power-back run's input is a drill's way back (marked in every event it sends). */
export function isDrillWayBack(input: unknown): boolean {
  const parsed = ZPowerBackInput.safeParse(input);
  return parsed.success && parsed.data.drill !== undefined;
}

export const NO_BACK_PLAN = "This run has no plan; PlanPowerBack must run first.";

export type BackHost = {
  targetId: string;
  name: string;
  kind: "pve-node" | "pbs";
  /** The onboarded host (its power controller hangs on it); null for a backup server. */
  hostId: string | null;
  endpoint: PveEndpoint | null;
  /**
   * A backup server's API (port 8007, its token and pinned certificate): waited for once its
   * controller powered it on. Absent in plans frozen before backup servers had controllers.
   */
  pbs?: PbsEndpoint | null;
  clusterId: string | null;
  /** Carries a Ceph monitor: powered on before the other nodes of its cluster. */
  monitor: boolean;
  stage: number;
};

export type BackCluster = {
  clusterId: string;
  name: string;
  /** Node names in power-on order. */
  nodes: string[];
  /** The flags this outage set (read from its shutdown run): cleared once Ceph is healthy. */
  cephFlags: string[];
  /** This outage disarmed HA (its shutdown run read it back): re-armed. */
  haDisarmed: boolean;
};

export type BackGuest = Pick<
  RecordedGuest,
  "node" | "type" | "name" | "startupOrder" | "upSeconds" | "haManaged"
> & { vmid: number; type: "qemu" | "lxc" };

export type PowerBackPlan = {
  mode: PowerMode;
  plannedAt: string;
  /** In power-on order: clusters (monitors first), standalone hosts by stage descending, backup servers last. */
  hosts: BackHost[];
  clusters: BackCluster[];
  /** The guests that ran before, to start again. */
  guests: BackGuest[];
  /** Nodes whose guests could not be listed before the shutdown: nothing is started there. */
  unknown: { node: string; why: string }[];
  /** Every UPS feeding these hosts: on battery again is a new outage. */
  feeds: string[];
  /** The shutdown's budget, the runtime a second outage needs. */
  budgetSeconds: number;
  guestParallelism: number;
};

/** A shutdown run as the way back reads it: its frozen plan and what its steps recorded. */
export type ShutdownRunRecord = { id: string; context: Record<string, unknown> };

type StepDone = Record<string, { done?: string }>;

/**
 * The way back of one outage, from its shutdown runs (their frozen plans and what their steps
 * read back) and the guests they recorded. Pure. A target spared or handed back by its run
 * never went down and is left out; the same host in several runs of the outage counts once.
 */
export function buildPowerBackPlan(input: {
  runs: readonly ShutdownRunRecord[];
  guests: readonly RecordedGuest[];
  mode: PowerMode;
  guestParallelism: number;
  now: Date;
}): PowerBackPlan {
  const hosts = new Map<string, BackHost>();
  const clusters = new Map<string, BackCluster & { order: ClusterSequencePlan["nodes"] }>();
  const feeds = new Set<string>();
  let budgetSeconds = 0;
  for (const run of input.runs) {
    const plan = run.context.plan as ShutdownPlan | undefined;
    if (!plan) continue;
    budgetSeconds = Math.max(budgetSeconds, plan.budgetSeconds);
    const left = new Set([
      ...((run.context.dropped as string[] | undefined) ?? []),
      ...((run.context.handedBack as string[] | undefined) ?? []),
    ]);
    const ha = (run.context["cluster:ha"] as StepDone | undefined) ?? {};
    const ceph = (run.context["cluster:ceph"] as StepDone | undefined) ?? {};
    for (const cluster of plan.clusters ?? []) {
      const entry = clusters.get(cluster.clusterId) ?? {
        clusterId: cluster.clusterId,
        name: cluster.name,
        nodes: [],
        cephFlags: [],
        haDisarmed: false,
        order: [],
      };
      entry.order.push(...cluster.nodes.filter((n) => !left.has(n.targetId ?? "")));
      if (ha[cluster.clusterId]?.done === "disarmed") entry.haDisarmed = true;
      if (cluster.hyperConverged && ceph[cluster.clusterId]?.done === "set") {
        const set = cluster.partial ? PARTIAL_OUTAGE_CEPH_FLAGS : SHUTDOWN_CEPH_FLAGS;
        entry.cephFlags = [...new Set([...entry.cephFlags, ...set])];
      }
      clusters.set(cluster.clusterId, entry);
    }
    const monitors = new Set(
      (plan.clusters ?? []).flatMap((c) =>
        c.nodes.filter((n) => n.role === "monitor").map((n) => n.targetId),
      ),
    );
    const clusterOfTarget = new Map(
      (plan.clusters ?? []).flatMap((c) => c.nodes.map((n) => [n.targetId, c.clusterId] as const)),
    );
    for (const target of plan.targets) {
      if (left.has(target.id) || hosts.has(target.id)) continue;
      for (const feed of target.feeds) feeds.add(feed.upsId);
      hosts.set(target.id, {
        targetId: target.id,
        name: target.name,
        kind: target.kind,
        hostId: target.endpoint?.kind === "pve-node" ? target.endpoint.hostId : null,
        endpoint: target.endpoint?.kind === "pve-node" ? target.endpoint : null,
        pbs: target.endpoint?.kind === "pbs" ? target.endpoint : null,
        clusterId: clusterOfTarget.get(target.id) ?? null,
        monitor: monitors.has(target.id),
        stage: target.stage,
      });
    }
  }
  const ordered: BackHost[] = [];
  const backClusters: BackCluster[] = [];
  for (const { order, ...cluster } of clusters.values()) {
    const names = [...new Set(order.map((n) => n.name))];
    const members = [...hosts.values()].filter((h) => h.clusterId === cluster.clusterId);
    // Ceph monitors first (they form the quorum every OSD waits for), then the rest, each in
    // the reverse of the order they went down.
    const byShutdown = (h: BackHost) => -names.indexOf(h.endpoint?.nodeName ?? h.name);
    const sorted = [...members].sort(
      (a, b) => Number(b.monitor) - Number(a.monitor) || byShutdown(a) - byShutdown(b),
    );
    ordered.push(...sorted);
    backClusters.push({ ...cluster, nodes: sorted.map((h) => h.endpoint?.nodeName ?? h.name) });
  }
  const standalone = [...hosts.values()].filter((h) => h.clusterId === null);
  // Standalone hosts in the reverse of their shutdown stages; backup servers last.
  ordered.push(
    ...standalone
      .sort(
        (a, b) =>
          Number(a.kind === "pbs") - Number(b.kind === "pbs") ||
          b.stage - a.stage ||
          a.name.localeCompare(b.name),
      )
      .filter((h) => !ordered.includes(h)),
  );
  const seen = new Set<string>();
  const guests: BackGuest[] = [];
  const unknown: PowerBackPlan["unknown"] = [];
  for (const g of input.guests) {
    if (g.state === "unknown" || g.vmid === null || (g.type !== "qemu" && g.type !== "lxc")) {
      unknown.push({ node: g.node, why: g.problem ?? "could not be listed" });
      continue;
    }
    // A guest recorded by two runs of one outage starts once.
    if (seen.has(String(g.vmid))) continue;
    seen.add(String(g.vmid));
    guests.push({
      vmid: g.vmid,
      type: g.type,
      node: g.node,
      name: g.name,
      startupOrder: g.startupOrder,
      upSeconds: g.upSeconds,
      haManaged: g.haManaged,
    });
  }
  return {
    mode: input.mode,
    plannedAt: input.now.toISOString(),
    hosts: ordered,
    clusters: backClusters,
    guests,
    unknown,
    feeds: [...feeds],
    budgetSeconds,
    guestParallelism: input.guestParallelism,
  };
}
