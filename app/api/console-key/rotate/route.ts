import { z } from "zod";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
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
export const POST = route(
  "POST /api/console-key/rotate",
  {
    role: "admin",
    summary: "Start a rotation of the console's SSH key",
    body: { schema: ZRotateBody, read: "json", optional: true },
    errorKeys: "field",
  },
  async ({ actor }) => json(await rotateConsoleKey(getDb(), actor), 202),
);
