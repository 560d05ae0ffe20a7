import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { readPowerMode } from "@/lib/power/queries/power-settings";
import { ZSetPowerMode } from "@/lib/power/config/schemas";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The mode every page shows: `{ mode: "dry-run" | "armed", armedAt, armedBy }`. */
export const GET = route(
  "GET /api/power/mode",
  { role: "viewer", summary: "The power mode: dry-run or armed" },
  async () => json(await readPowerMode(getDb())),
);

/**
 * Arms or disarms (admins; audited). Arming confirms the targets it was shown:
 * `{ mode: "armed", confirmedTargetIds: [...] }` with the ids of `GET /api/power/plan`'s
 * `armingTargets`; a plan that changed since is refused with 409 and nothing changes.
 * Disarming: `{ mode: "dry-run" }`. Answers `{ mode, targets }` (target names).
 */
export const POST = route(
  "POST /api/power/mode",
  {
    role: "admin",
    summary: "Arm (confirming the targets) or disarm",
    body: { schema: ZSetPowerMode, read: "json" },
  },
  async ({ actor, body }) => json(await setPowerMode(getDb(), body, actor)),
);
