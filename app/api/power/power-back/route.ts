import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { bringBackNow, ZBringBackNow } from "@/lib/power/operations/bring-back-now";
import { powerBackPageView } from "@/lib/power/queries/power-back-run";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The way back as the power page shows it (viewers): `{ powerBack, bringBack }`. `powerBack`:
 * the power-back run running now, or the latest one when it came after the latest shutdown run
 * (`{ run, origin, verdict, steps }`: `run` as `/api/runs/:id` shows it, `verdict` its one line
 * decided from what the run recorded, `steps` those skipped or only dry-run), else null.
 * `bringBack`: what Bring back now would do now (`{ mode, hosts: [{ name, controller }],
 * guests, clusters }`, from the stored controllers, no BMC asked) or `{ refused }` with why.
 */
export const GET = route(
  "GET /api/power/power-back",
  { role: "viewer", summary: "The way back running now, or the latest one after an outage" },
  async () => json(await powerBackPageView(getDb())),
);

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
