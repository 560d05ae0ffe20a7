import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { latestShutdownRun } from "@/lib/power/queries/shutdown-run";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The latest power-shutdown run (running now, or the last one): `{ shutdown: { run, calls } }`,
 * `{ shutdown: null }` when there never was one. `run` is the run as `/api/runs/:id` shows it;
 * `calls` what was sent (or would have been, in dry-run) to each target.
 */
export const GET = route(
  "GET /api/power/shutdown-run",
  { role: "viewer", summary: "The latest power-shutdown run and what it sent" },
  async () => json({ shutdown: await latestShutdownRun(getDb()) }),
);
