import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { requestClusterRefreshBy } from "@/lib/power/cluster-refresh/refresh-task";
import { ZRefreshClusters } from "@/lib/power/clusters/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Asks every active host for its cluster now (operators and admins): the worker does it within
 * seconds and the page updates by itself. Body `{}`. → 202 `{ queued: true }`.
 */
export const POST = route(
  "POST /api/power/clusters/refresh",
  {
    role: "operator",
    summary: "Ask every active host for its cluster now",
    body: { schema: ZRefreshClusters },
  },
  async ({ actor }) => {
    await requestClusterRefreshBy(getDb(), actor);
    return json({ queued: true }, 202);
  },
);
