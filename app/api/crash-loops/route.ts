import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { currentCrashLoops } from "@/lib/supervisor/crash-loops";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The console's own processes that are in a crash loop now (`npm start`'s supervisor records
 * every restart): `{ crashLoops: [{ process, restarts, windowMinutes, lastEnding, lastEndedAt,
 * calmsInMs }] }`, empty when all is calm. Every page shows it as a banner.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ crashLoops: await currentCrashLoops(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/crash-loops");
  }
}
