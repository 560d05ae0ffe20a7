import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listClusterGroups, listLooseHosts } from "@/lib/power/clusters/cluster-groups-view";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The clusters the onboarded hosts belong to, as their APIs last reported them:
 * `{ clusters: [{ id, name, policy, hyperConverged, quorate, nodes: [{ name, ip, online, cephMon,
 * hostId, hostName, targetId, protected, askError }], refreshedAt, refreshError }],
 * standalone: [{ hostId, name, checkedAt, askError }], unknown: [{ hostId, name, askError }] }`:
 * hosts in no cluster as they answered, and hosts that never answered (membership not known).
 */
export const GET = route(
  "GET /api/power/clusters",
  { role: "viewer", summary: "The clusters the hosts belong to, and the hosts in none" },
  async () => {
    const db = getDb();
    const [clusters, loose] = await Promise.all([listClusterGroups(db), listLooseHosts(db)]);
    return json({ clusters, ...loose });
  },
);
