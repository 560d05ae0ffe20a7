import { requestActor, type Actor } from "@/lib/auth/actor";
import type { Role } from "@/lib/roles";
import { ZHostId } from "@/lib/hosts/schemas";
import { parseId, respondError } from "./respond";

/** The second argument Next.js passes to a handler under `app/api/hosts/[hostId]/`. */
export type HostRouteContext = { params: Promise<{ hostId: string }> };

/**
 * The frame every `/api/hosts/:hostId…` handler shares. The role is checked before the id or
 * the body is read, so a caller without it gets 401/403 and learns nothing about its input; a
 * malformed id is a 400 before Postgres sees it; anything `handle` throws becomes the mapped
 * error response, logged under `context` (the method and route, e.g. "POST /api/hosts/[hostId]/runs").
 */
export async function respondForHost(
  request: Request,
  { params }: HostRouteContext,
  required: Role,
  context: string,
  handle: (actor: Actor, hostId: string) => Promise<Response>,
): Promise<Response> {
  try {
    const actor = await requestActor(request, required);
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    return await handle(actor, hostId);
  } catch (error) {
    return respondError(error, context);
  }
}
