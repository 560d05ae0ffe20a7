import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { reonboardHost } from "@/lib/hosts/reonboard-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Onboards the host again: 201 `{ runId }` for the new run; 404 for an unknown host; 409 while
 * its latest run is still running.
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
      { actor, action: "host.reonboard", target: `host:${hostId}` },
      () => reonboardHost(db, { hostId, actor: actor.name }),
    );
    return json(started, 201);
  } catch (error) {
    return respondError(error, "POST /api/hosts/[hostId]/runs");
  }
}
