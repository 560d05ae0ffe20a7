import type { Metadata } from "next";
import { ClusterGroups } from "@/components/power/cluster-groups";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { listClusterGroups, listLooseHosts } from "@/lib/power/clusters/cluster-groups-view";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Clusters" };

/** Which onboarded hosts form a cluster, and how each cluster goes down on a power event. */
export default async function PowerClustersPage() {
  await requirePageActor("viewer", "/power/clusters");
  const db = getDb();
  const [clusters, loose] = await Promise.all([listClusterGroups(db), listLooseHosts(db)]);
  return (
    <>
      <h1>Clusters</h1>
      <p className="lead">
        The console asks each onboarded Proxmox VE host which cluster it belongs to (every few
        minutes, and at once when a host becomes active). A cluster goes down as one unit by
        default: HA disarmed, every guest stopped, Ceph flagged, then the nodes in order — Ceph
        monitors after the others, the console&apos;s own node last.
      </p>
      <ClusterGroups initial={{ clusters, ...loose }} />
    </>
  );
}
