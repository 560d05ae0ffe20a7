import { respondForHost, type HostRouteContext } from "@/lib/api/host-route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostReonboard } from "@/lib/hosts/reonboard-host";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Onboards the host again: 201 `{ runId }` for the new run; 404 for an unknown host; 409 while
 * its latest run is still running.
 */
export async function POST(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "operator",
    "POST /api/hosts/[hostId]/runs",
    async (actor, hostId) => json(await auditedHostReonboard(getDb(), actor, hostId), 201),
  );
}
