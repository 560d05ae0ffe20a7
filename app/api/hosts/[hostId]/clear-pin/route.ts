import { respondForHost, type HostRouteContext } from "@/lib/api/host-route";
import { json, readJson } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostPinClearing, ZClearHostPin } from "@/lib/hosts/clear-host-pin";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Clears the host's SSH host key pin: body `{ fingerprint }`, the pin being cleared (a pin that
 * changed meanwhile is not cleared: 409). 200 `{ hostId, cleared }`; 409 without a pin, while a
 * run is running, or for a retired host. The next connection pins what the host presents.
 */
export async function POST(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "operator",
    "POST /api/hosts/[hostId]/clear-pin",
    async (actor, hostId) => {
      const { fingerprint } = ZClearHostPin.parse(await readJson(request));
      return json(await auditedHostPinClearing(getDb(), actor, { hostId, fingerprint }));
    },
  );
}
