import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { readPowerMode } from "@/lib/power/queries/power-settings";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The mode every page shows: `{ mode: "dry-run" | "armed", armedAt, armedBy }`. */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json(await readPowerMode(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/power/mode");
  }
}
