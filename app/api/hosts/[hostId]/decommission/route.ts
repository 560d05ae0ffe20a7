import { respondForHost, type HostRouteContext } from "@/lib/api/host-route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostDecommission } from "@/lib/hosts/decommission-host";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Starts decommissioning: 201 `{ runId, abortsRunId }` (the run to abort first, or null). Each
 * step's result is on the run (`GET /api/runs/:runId`, timeline details). 409 for a retired
 * host or one being decommissioned already.
 */
export async function POST(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "operator",
    "POST /api/hosts/[hostId]/decommission",
    async (actor, hostId) => json(await auditedHostDecommission(getDb(), actor, hostId), 201),
  );
}
