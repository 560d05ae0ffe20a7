import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
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
    const actor = (await requestActor(request, "operator")).name;
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    return json(await reonboardHost(getDb(), { hostId, actor }), 201);
  } catch (error) {
    return respondError(error, "POST /api/hosts/[hostId]/runs");
  }
}
