import { z } from "zod";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { rotationStatus } from "@/lib/console-key/rotation/status";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const ZRotationId = z.uuid({ error: "Not a rotation id." });

/**
 * One rotation's progress: run status and phase, and per host `{ hostName, outcome (pending |
 * switched | new_key_refused | unreachable), detail }`.
 */
export const GET = route(
  "GET /api/console-key/rotations/[rotationId]",
  { role: "viewer", summary: "One key rotation's progress", params: { rotationId: ZRotationId } },
  async ({ params: { rotationId } }) => {
    const status = await rotationStatus(getDb(), rotationId);
    if (!status) throw new AppError("not_found", `Key rotation ${rotationId} does not exist.`);
    return json(status);
  },
);
