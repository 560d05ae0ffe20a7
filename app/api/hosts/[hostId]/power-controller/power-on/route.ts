import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { ZHostId } from "@/lib/hosts/schemas";
import { powerOnProtectedHost } from "@/lib/power/operations/power-on-protected-host";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Powers the host on through its controller: 200 `{ hostId, result, after, message }` —
 * `already-on` (read On, nothing sent) or `sent` with what the controller reads afterwards
 * (`after`: null for Wake-on-LAN, which cannot tell). 409 without a controller or for a retired
 * host, and while a feed's shutdown trigger holds on battery (the outage's call covers the host:
 * powered on, it would not be shut down again); 503 when the controller did not take the
 * request (the message says what to fix). Mains back, it ends the outage for the host's feeds.
 * Audited as `host.power_on`.
 */
export const POST = route(
  "POST /api/hosts/[hostId]/power-controller/power-on",
  {
    role: "operator",
    summary: "Power a host on through its out-of-band controller",
    params: { hostId: ZHostId },
  },
  async ({ actor, params: { hostId } }) => json(await powerOnProtectedHost(getDb(), actor, hostId)),
);
