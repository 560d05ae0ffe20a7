import { asc, eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts, powerClusterMemberships, powerClusters, powerTargets } from "@/lib/db/schema";
import type { ConsolidateCheck } from "@/lib/power/clusters/consolidation-check";
import type { ClusterMembership } from "./membership-evidence";
import {
  DEFAULT_CONSOLIDATE_SETTINGS,
  ZConsolidateSettings,
  type ConsolidateSettings,
} from "./schemas";

export type ClusterPolicy = "cluster" | "whole-cluster" | "per-host" | "consolidate";

export type ClusterGroup = {
  id: string;
  name: string;
  /** The name, and where another known cluster has the same name, its onboarded hosts too. */
  label: string;
  /**
   * The policy in effect: the chosen one, except for a cluster the console cannot tell apart
   * from another of the same name — that one goes down as one unit (`policyNote` says why).
   */
  policy: ClusterPolicy;
  /** What an admin chose (the default `cluster` until one did). */
  chosenPolicy: ClusterPolicy;
  /** Why the policy in effect is not the chosen one; null when it is. */
  policyNote: string | null;
  /** How the console knows which hosts are this cluster's; null: not judged yet. */
  membership: ClusterMembership | null;
  /** Ambiguous membership, in one line (the card and the plan say it); null when clear. */
  ambiguity: string | null;
  hyperConverged: boolean;
  quorate: boolean | null;
  /** Policy `consolidate`: its settings (the defaults until an admin set them). */
  consolidate: ConsolidateSettings;
  /** The last check whether consolidating can work; null: never checked. */
  consolidateCheck: ConsolidateCheck | null;
  nodes: {
    name: string;
    ip: string | null;
    online: boolean | null;
    cephMon: boolean;
    hostId: string | null;
    targetId: string | null;
    /** Guests running on it at the last refresh; null: not known. */
    runningGuests: number | null;
  }[];
  refreshedAt: string | null;
  refreshError: string | null;
};

type Reader = Pick<Database, "select">;

/**
 * The clusters the console's hosts belong to, as last reported, each node matched to the
 * onboarded host that reported itself a member under that node name (and its power target, if
 * protected). Nodes the console does not know have hostId/targetId null. Ordered by name (two
 * clusters may share one: the older first).
 */
export async function loadClusterGroups(db: Reader): Promise<ClusterGroup[]> {
  const clusters = await db
    .select()
    .from(powerClusters)
    .orderBy(asc(powerClusters.name), asc(powerClusters.createdAt));
  if (clusters.length === 0) return [];
  const members = await db
    .select({
      clusterId: powerClusterMemberships.clusterId,
      hostId: hosts.id,
      hostName: hosts.name,
      nodeName: hosts.nodeName,
      targetId: powerTargets.id,
    })
    .from(powerClusterMemberships)
    .innerJoin(hosts, eq(hosts.id, powerClusterMemberships.hostId))
    .leftJoin(powerTargets, eq(powerTargets.hostId, hosts.id))
    .where(
      inArray(
        powerClusterMemberships.clusterId,
        clusters.map((c) => c.id),
      ),
    );
  const labelOf = (cluster: (typeof clusters)[number]) => {
    if (clusters.filter((c) => c.name === cluster.name).length < 2) return cluster.name;
    const names = members
      .filter((m) => m.clusterId === cluster.id)
      .map((m) => m.hostName)
      .sort();
    return `${cluster.name} (${names.join(", ") || "no host"})`;
  };
  return clusters.map((cluster) => {
    const ambiguous =
      cluster.membership?.verdict === "ambiguous"
        ? cluster.membership.sameName.filter((s) => s.kind === "ambiguous")
        : [];
    const ambiguity =
      ambiguous.length === 0
        ? null
        : `the console cannot tell whether ${labelOf(cluster)} is the same cluster as ${ambiguous
            .map((s) => {
              const other = clusters.find((c) => c.id === s.clusterId);
              return other ? labelOf(other) : `${cluster.name} (${s.hosts.join(", ")})`;
            })
            .join(" or ")}: ${ambiguous[0]!.why}`;
    // Which nodes lost power means nothing while membership is unclear: as one unit, always.
    const policy: ClusterPolicy = ambiguity ? "whole-cluster" : cluster.policy;
    return {
      id: cluster.id,
      name: cluster.name,
      label: labelOf(cluster),
      policy,
      chosenPolicy: cluster.policy,
      policyNote:
        policy === cluster.policy || (cluster.policy === "cluster" && policy === "whole-cluster")
          ? null
          : `${cluster.policy === "per-host" ? "per host" : cluster.policy} is suspended while the console cannot tell which hosts are this cluster's: it goes down as one unit — HA disarmed and every guest stopped through its own hosts, and no node of any cluster goes down before that is done for every one`,
      membership: cluster.membership,
      ambiguity,
      hyperConverged: cluster.hyperConverged,
      quorate: cluster.quorate,
      consolidate: consolidateSettingsOf(cluster.consolidate),
      consolidateCheck: cluster.consolidateCheck,
      nodes: cluster.nodes.map((node) => {
        const member = members.find((m) => m.clusterId === cluster.id && m.nodeName === node.name);
        return {
          name: node.name,
          ip: node.ip,
          online: node.online,
          cephMon: node.cephMon,
          hostId: member?.hostId ?? null,
          targetId: member?.targetId ?? null,
          runningGuests: node.runningGuests ?? null,
        };
      }),
      refreshedAt: cluster.refreshedAt?.toISOString() ?? null,
      refreshError: cluster.refreshError,
    };
  });
}

/** Stored consolidate settings, or the defaults where none (or none this version reads) are. */
export function consolidateSettingsOf(stored: unknown): ConsolidateSettings {
  const parsed = ZConsolidateSettings.safeParse(stored);
  return parsed.success ? parsed.data : DEFAULT_CONSOLIDATE_SETTINGS;
}
