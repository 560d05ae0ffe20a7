import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { consoleKeyOverview } from "@/lib/console-key/overview";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The console's SSH key: `{ key: { id, publicKey, fingerprint, state, … }, installCommand,
 * hostCount, history, rotation }` (lib/console-key/overview.ts). The private key never leaves
 * the server.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json(await consoleKeyOverview(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/console-key");
  }
}
