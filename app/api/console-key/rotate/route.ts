import { z } from "zod";

import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { rotateConsoleKey } from "@/lib/console-key/rotate";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The body is empty or `{}`: a rotation takes no options (anything else is a 400). */
const ZRotateBody = z.object({}).strict();

/**
 * Starts a key rotation (admin): 202 `{ rotationId, runId, fromKeyId, toKeyId, hostCount }`;
 * 409 while another rotation runs. Progress: `GET /api/console-key/rotations/:rotationId`.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const text = await request.text();
    ZRotateBody.parse(text.trim() === "" ? {} : parseJson(text));
    const started = await rotateConsoleKey(getDb(), actor);
    return json(started, 202);
  } catch (error) {
    return respondError(error, "POST /api/console-key/rotate");
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // not an object: the schema answers with a 400
  }
}
