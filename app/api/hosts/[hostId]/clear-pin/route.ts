import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostPinClearing, ZClearHostPin } from "@/lib/hosts/clear-host-pin";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Clears the host's SSH host key pin: body `{ fingerprint }`, the pin being cleared (a pin that
 * changed meanwhile is not cleared: 409). 200 `{ hostId, cleared }`; 409 without a pin, while a
 * run is running, or for a retired host. The next connection pins what the host presents.
 */
export const POST = route(
  "POST /api/hosts/[hostId]/clear-pin",
  {
    role: "operator",
    summary: "Clear a host's SSH host key pin",
    params: { hostId: ZHostId },
    body: { schema: ZClearHostPin, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, params: { hostId }, body: { fingerprint } }) =>
    json(await auditedHostPinClearing(getDb(), actor, { hostId, fingerprint })),
);
