import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listClusterGroups } from "@/lib/power/clusters/cluster-groups-view";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The clusters the onboarded hosts belong to, as their APIs last reported them:
 * `{ clusters: [{ id, name, policy, hyperConverged, quorate, nodes: [{ name, ip, online, cephMon,
 * hostId, hostName, targetId, protected, askError }], refreshedAt, refreshError }] }`.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ clusters: await listClusterGroups(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/power/clusters");
  }
}
