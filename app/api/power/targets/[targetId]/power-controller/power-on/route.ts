import { z } from "zod";

import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { powerOnProtectedPbs } from "@/lib/power/operations/power-on-protected-host";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Powers a backup server on through its controller: 200 `{ targetId, result, after, message }`
 * — `already-on` (read On, nothing sent) or `sent` with what the controller reads afterwards
 * (null for Wake-on-LAN). 409 without a controller, for a pve-node target, and while a feed's
 * shutdown trigger holds on battery; 503 when the controller did not take the request. Mains
 * back, it ends the outage for its feeds. Audited as `power.target_power_on`.
 */
export const POST = route(
  "POST /api/power/targets/[targetId]/power-controller/power-on",
  {
    role: "operator",
    summary: "Power a backup server on through its out-of-band controller",
    params: { targetId: z.uuid({ error: "Not a target id." }) },
  },
  async ({ actor, params: { targetId } }) =>
    json(await powerOnProtectedPbs(getDb(), actor, targetId)),
);
