import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { latestShutdownRun } from "@/lib/power/queries/shutdown-run";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The latest power-shutdown run (running now, or the last one): `{ shutdown: { run, calls } }`,
 * `{ shutdown: null }` when there never was one. `run` is the run as `/api/runs/:id` shows it;
 * `calls` what was sent (or would have been, in dry-run) to each target.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ shutdown: await latestShutdownRun(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/power/shutdown-run");
  }
}
