import "server-only";
import { and, asc, eq, isNull, ne } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { hosts, powerClusterMemberships, powerClusters } from "@/lib/db/schema";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";

import type { WolMember } from "./pve-wol";

/**
 * The other members of a host's cluster the console can ask: active hosts the last cluster
 * refresh found in the same cluster, each with its own API address, pin and token — never the
 * host itself. By name, so the member tried first is always the same. Empty when the host is in
 * no cluster the console knows.
 */
export async function otherClusterMembers(
  db: Database,
  hostId: string,
  options: { timeoutMs: number },
): Promise<WolMember[]> {
  const [own] = await db
    .select({ clusterId: powerClusterMemberships.clusterId })
    .from(powerClusterMemberships)
    .where(eq(powerClusterMemberships.hostId, hostId));
  if (!own?.clusterId) return [];
  const rows = await db
    .select({ host: hosts })
    .from(powerClusterMemberships)
    .innerJoin(hosts, eq(hosts.id, powerClusterMemberships.hostId))
    .where(
      and(
        eq(powerClusterMemberships.clusterId, own.clusterId),
        ne(hosts.id, hostId),
        isNull(hosts.retiredAt),
      ),
    )
    .orderBy(asc(hosts.nodeName), asc(hosts.id));
  const members: WolMember[] = [];
  for (const { host } of rows) {
    if (!host.nodeName || !host.apiCertSha256 || !host.apiTokenId || !host.apiTokenCredentialId)
      continue;
    const client = await proxmoxClientForHost(db, host, { timeoutMs: options.timeoutMs });
    members.push({
      name: host.nodeName,
      wakeOnLan: (node) => client.wakeOnLan(node),
      wakeOnLanConfig: (node) => client.wakeOnLanConfig(node),
    });
  }
  return members;
}

/** The name of the Proxmox cluster the host was last found a member of; null: none known. */
export async function clusterNameOfHost(
  db: Pick<Database, "select">,
  hostId: string,
): Promise<string | null> {
  const [row] = await db
    .select({ name: powerClusters.name })
    .from(powerClusterMemberships)
    .innerJoin(powerClusters, eq(powerClusters.id, powerClusterMemberships.clusterId))
    .where(eq(powerClusterMemberships.hostId, hostId));
  return row?.name ?? null;
}
