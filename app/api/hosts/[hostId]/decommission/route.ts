import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { decommissionHost } from "@/lib/hosts/decommission-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Starts decommissioning: 201 `{ runId, abortsRunId }` (the run to abort first, or null). Each
 * step's result is on the run (`GET /api/runs/:runId`, timeline details). 409 for a retired
 * host or one being decommissioned already.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    const db = getDb();
    const started = await audited(
      db,
      { actor, action: "host.decommission", target: `host:${hostId}` },
      () => decommissionHost(db, { hostId, actor: actor.name }),
    );
    return json(started, 201);
  } catch (error) {
    return respondError(error, "POST /api/hosts/[hostId]/decommission");
  }
}
