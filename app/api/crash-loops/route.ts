import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { currentCrashLoops } from "@/lib/supervisor/crash-loops";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The console's own processes that are in a crash loop now (`npm start`'s supervisor records
 * every restart): `{ crashLoops: [{ process, restarts, windowMinutes, lastEnding, lastEndedAt,
 * calmsInMs }] }`, empty when all is calm. Every page shows it as a banner.
 */
export const GET = route(
  "GET /api/crash-loops",
  { role: "viewer", summary: "The console's own processes in a crash loop now" },
  async () => json({ crashLoops: await currentCrashLoops(getDb()) }),
);
