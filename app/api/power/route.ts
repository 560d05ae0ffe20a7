import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { getPowerOverview } from "@/lib/power/queries/power-overview";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The power page's top: `{ serverTime, mode: { mode, armedAt, armedBy }, ups: [card…],
 * unacknowledged }`. Times on battery and reading ages are by the console's clock (`serverTime`).
 */
export const GET = route(
  "GET /api/power",
  { role: "viewer", summary: "The power overview: mode, every UPS, alarms to acknowledge" },
  async () => json(await getPowerOverview(getDb())),
);
