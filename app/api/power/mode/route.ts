import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { json, readJson, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { readPowerMode } from "@/lib/power/queries/power-settings";
import { ZSetPowerMode } from "@/lib/power/schemas";
import { setPowerMode } from "@/lib/power/set-power-mode";

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

/**
 * Arms or disarms (admins; audited). Arming confirms the targets it was shown:
 * `{ mode: "armed", confirmedTargetIds: [...] }` with the ids of `GET /api/power/plan`'s
 * `armingTargets`; a plan that changed since is refused with 409 and nothing changes.
 * Disarming: `{ mode: "dry-run" }`. Answers `{ mode, targets }` (target names).
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = parseInput(ZSetPowerMode, await readJson(request));
    return json(await setPowerMode(getDb(), input, actor));
  } catch (error) {
    return respondError(error, "POST /api/power/mode");
  }
}
