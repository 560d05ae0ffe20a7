import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { getHost } from "@/lib/hosts/get-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** One host with its latest run: timeline, events and log tail. */
export async function GET(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    const host = await getHost(getDb(), hostId);
    if (!host) throw new AppError("not_found", `Host ${hostId} does not exist.`);
    return json(host);
  } catch (error) {
    return respondError(error, "GET /api/hosts/[hostId]");
  }
}
