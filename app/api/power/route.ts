import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { getPowerOverview } from "@/lib/power/queries/power-overview";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The power page's top: `{ serverTime, mode: { mode, armedAt, armedBy }, ups: [card…],
 * unacknowledged }`. Times on battery and reading ages are by the console's clock (`serverTime`).
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json(await getPowerOverview(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/power");
  }
}
