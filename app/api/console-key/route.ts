import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { consoleKeyOverview } from "@/lib/console-key/overview";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The console's SSH key: `{ key: { id, publicKey, fingerprint, state, … }, installCommand,
 * hostCount, history, rotation }` (lib/console-key/overview.ts). The private key never leaves
 * the server.
 */
export const GET = route(
  "GET /api/console-key",
  { role: "viewer", summary: "The console's SSH key, its history and any rotation" },
  async () => json(await consoleKeyOverview(getDb())),
);
