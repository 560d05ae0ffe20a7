import { z } from "zod";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { releaseLatch } from "@/lib/power/operations/release-latch";
import { ZReleaseLatch } from "@/lib/power/config/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Releases the UPS's latched trigger by hand (admins; audited): 200 `{ upsId, duringOutage }`;
 * 409 when nothing is latched, 404 for an unknown UPS. The body is empty or
 * `{ confirmDuringOutage }`: while the UPS is (last seen) on battery a release lets its trigger
 * fire again within seconds and shut its targets down again, so it then needs
 * `confirmDuringOutage: true` (without it: 409 naming the UPS's state, nothing released).
 */
export const POST = route(
  "POST /api/power/ups/[upsId]/release-latch",
  {
    role: "admin",
    summary: "Release a UPS's latched trigger by hand",
    params: { upsId: z.uuid({ error: "Not a UPS id." }) },
    body: { schema: ZReleaseLatch, optional: true, fromPath: { upsId: "upsId" } },
  },
  async ({ actor, body }) => json(await releaseLatch(getDb(), body, actor)),
);
