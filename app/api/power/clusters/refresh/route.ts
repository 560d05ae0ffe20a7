import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { requestClusterRefreshBy } from "@/lib/power/clusters/refresh-task";
import { ZRefreshClusters } from "@/lib/power/clusters/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Asks every active host for its cluster now (operators and admins): the worker does it within
 * seconds and the page updates by itself. Body `{}`. → 202 `{ queued: true }`.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    parseInput(ZRefreshClusters, await readJsonObject(request));
    await requestClusterRefreshBy(getDb(), actor);
    return json({ queued: true }, 202);
  } catch (error) {
    return respondError(error, "POST /api/power/clusters/refresh");
  }
}
