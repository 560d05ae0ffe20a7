import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { restoreCluster, ZRestoreCluster } from "@/lib/power/operations/restore-cluster";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * After power is back (admins; audited): `{ clusterId }` re-arms the cluster's HA (`arm-ha`) and
 * clears the Ceph flags the shutdown set, each read back. Answers `{ cluster, node, items,
 * restored }`: every item restored, not available (before PVE 9.2), or failed with why. 404 for
 * an unknown cluster, 503 while none of its nodes answers.
 */
export const POST = route(
  "POST /api/power/restore",
  {
    role: "admin",
    summary: "Re-arm a cluster's HA and clear its Ceph flags after power is back",
    body: { schema: ZRestoreCluster, read: "json" },
  },
  async ({ actor, body }) => json(await restoreCluster(getDb(), body, actor)),
);
