import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostDecommission } from "@/lib/hosts/decommission-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Starts decommissioning: 201 `{ runId, abortsRunId }` (the run to abort first, or null). Each
 * step's result is on the run (`GET /api/runs/:runId`, timeline details). 409 for a retired
 * host or one being decommissioned already.
 */
export const POST = route(
  "POST /api/hosts/[hostId]/decommission",
  { role: "operator", summary: "Decommission a host", params: { hostId: ZHostId } },
  async ({ actor, params: { hostId } }) =>
    json(await auditedHostDecommission(getDb(), actor, hostId), 201),
);
