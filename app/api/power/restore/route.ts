import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { json, readJson, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { restoreCluster, ZRestoreCluster } from "@/lib/power/restore-cluster";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * After power is back (admins; audited): `{ clusterId }` re-arms the cluster's HA (`arm-ha`) and
 * clears the Ceph flags the shutdown set, each read back. Answers `{ cluster, node, items,
 * restored }`: every item restored, not available (before PVE 9.2), or failed with why. 404 for
 * an unknown cluster, 503 while none of its nodes answers.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = parseInput(ZRestoreCluster, await readJson(request));
    return json(await restoreCluster(getDb(), input, actor));
  } catch (error) {
    return respondError(error, "POST /api/power/restore");
  }
}
