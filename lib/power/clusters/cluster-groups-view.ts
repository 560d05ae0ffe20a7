import { asc, eq, inArray, isNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts, powerClusterMemberships, powerTargets } from "@/lib/db/schema";
import { loadClusterGroups, type ClusterGroup } from "./load-cluster-groups";

/** A cluster group as the pages and the API show it: each known node's host and its last ask. */
export type ClusterGroupView = Omit<ClusterGroup, "nodes"> & {
  nodes: (ClusterGroup["nodes"][number] & {
    hostName: string | null;
    /** The host's protection is on (a power target, enabled). */
    protected: boolean;
    /** Why this host could not be asked at the last try; null when it answered. */
    askError: string | null;
  })[];
};

export async function listClusterGroups(db: Pick<Database, "select">): Promise<ClusterGroupView[]> {
  const groups = await loadClusterGroups(db);
  const hostIds = groups.flatMap((g) => g.nodes.flatMap((n) => (n.hostId ? [n.hostId] : [])));
  const rows =
    hostIds.length === 0
      ? []
      : await db
          .select({
            hostId: hosts.id,
            name: hosts.name,
            askError: powerClusterMemberships.askError,
            enabled: powerTargets.enabled,
          })
          .from(hosts)
          .innerJoin(powerClusterMemberships, eq(powerClusterMemberships.hostId, hosts.id))
          .leftJoin(powerTargets, eq(powerTargets.hostId, hosts.id))
          .where(inArray(hosts.id, hostIds));
  const byHost = new Map(rows.map((row) => [row.hostId, row]));
  return groups.map((group) => ({
    ...group,
    nodes: group.nodes.map((node) => {
      const host = node.hostId ? byHost.get(node.hostId) : undefined;
      return {
        ...node,
        hostName: host?.name ?? null,
        protected: node.targetId !== null && host?.enabled === true,
        askError: host?.askError ?? null,
      };
    }),
  }));
}

/** Hosts in no cluster: standalone as they answered, or not known because they never answered. */
export type LooseHosts = {
  standalone: { hostId: string; name: string; checkedAt: string; askError: string | null }[];
  unknown: { hostId: string; name: string; askError: string | null }[];
};

export async function listLooseHosts(db: Pick<Database, "select">): Promise<LooseHosts> {
  const rows = await db
    .select({
      hostId: hosts.id,
      name: hosts.name,
      checkedAt: powerClusterMemberships.checkedAt,
      askError: powerClusterMemberships.askError,
    })
    .from(powerClusterMemberships)
    .innerJoin(hosts, eq(hosts.id, powerClusterMemberships.hostId))
    .where(isNull(powerClusterMemberships.clusterId))
    .orderBy(asc(hosts.name));
  return {
    standalone: rows.flatMap((row) =>
      row.checkedAt
        ? [
            {
              hostId: row.hostId,
              name: row.name,
              checkedAt: row.checkedAt.toISOString(),
              askError: row.askError,
            },
          ]
        : [],
    ),
    unknown: rows.flatMap((row) =>
      row.checkedAt ? [] : [{ hostId: row.hostId, name: row.name, askError: row.askError }],
    ),
  };
}
