import { z } from "zod";

import { requestActor } from "@/lib/auth/actor";
import { json, parseId, respondError } from "@/lib/api/respond";
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
export async function GET(
  request: Request,
  { params }: { params: Promise<{ rotationId: string }> },
): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const rotationId = parseId(ZRotationId, (await params).rotationId, "rotationId");
    const status = await rotationStatus(getDb(), rotationId);
    if (!status) throw new AppError("not_found", `Key rotation ${rotationId} does not exist.`);
    return json(status);
  } catch (error) {
    return respondError(error, "GET /api/console-key/rotations/[rotationId]");
  }
}
