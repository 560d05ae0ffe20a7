import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { bringBackNow, ZBringBackNow } from "@/lib/power/operations/bring-back-now";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Bring back now (admins; audited): `{}` starts a power-back run for the open outage without
 * waiting for the policy. 200 `{ runId }`; 409 while one runs, when no outage is open, or while
 * its shutdown still goes on.
 */
export const POST = route(
  "POST /api/power/power-back",
  {
    role: "admin",
    summary: "Bring the fleet back now after an outage (a power-back run)",
    body: { schema: ZBringBackNow, read: "json" },
  },
  async ({ actor, body }) => json(await bringBackNow(getDb(), body, actor)),
);
