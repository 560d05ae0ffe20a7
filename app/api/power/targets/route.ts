import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { listTargetProtection } from "@/lib/power/queries/target-protection";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every protected target with its protection: `{ targets: [{ id, kind, name, endpoint, feeds,
 * feedPolicy, stage, runsConsole, enabled, token: { answer, reason, asOf } }] }`.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ targets: await listTargetProtection(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/power/targets");
  }
}
