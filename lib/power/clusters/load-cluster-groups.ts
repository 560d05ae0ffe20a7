import { asc, eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts, powerClusterMemberships, powerClusters, powerTargets } from "@/lib/db/schema";
import type { ConsolidateCheck } from "@/lib/power/consolidate/check";
import {
  DEFAULT_CONSOLIDATE_SETTINGS,
  ZConsolidateSettings,
  type ConsolidateSettings,
} from "./schemas";

export type ClusterPolicy = "cluster" | "per-host" | "consolidate";

export type ClusterGroup = {
  id: string;
  name: string;
  policy: ClusterPolicy;
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
  }[];
  refreshedAt: string | null;
  refreshError: string | null;
};

type Reader = Pick<Database, "select">;

/**
 * The clusters the console's hosts belong to, as last reported, each node matched to the
 * onboarded host that reported itself a member under that node name (and its power target, if
 * protected). Nodes the console does not know have hostId/targetId null. Ordered by name.
 */
export async function loadClusterGroups(db: Reader): Promise<ClusterGroup[]> {
  const clusters = await db.select().from(powerClusters).orderBy(asc(powerClusters.name));
  if (clusters.length === 0) return [];
  const members = await db
    .select({
      clusterId: powerClusterMemberships.clusterId,
      hostId: hosts.id,
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
  return clusters.map((cluster) => ({
    id: cluster.id,
    name: cluster.name,
    policy: cluster.policy,
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
      };
    }),
    refreshedAt: cluster.refreshedAt?.toISOString() ?? null,
    refreshError: cluster.refreshError,
  }));
}

/** Stored consolidate settings, or the defaults where none (or none this version reads) are. */
export function consolidateSettingsOf(stored: unknown): ConsolidateSettings {
  const parsed = ZConsolidateSettings.safeParse(stored);
  return parsed.success ? parsed.data : DEFAULT_CONSOLIDATE_SETTINGS;
}
