import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostCreation } from "@/lib/hosts/create-host";
import { queryFleet } from "@/lib/hosts/fleet-query";
import { fleetParamsObject, ZFleetQuery } from "@/lib/hosts/fleet-schemas";
import { ZCreateHost } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One page of the fleet (no secrets):
 * `?q=&state=&failedStep=&attention=&sort=&dir=&page=&limit=` (lib/hosts/fleet-schemas.ts;
 * `state` repeats or lists with commas) → `{ hosts, total, countsByState, attentionCount,
 * failedSteps, page: { number, size, totalPages } }` (lib/hosts/fleet-query.ts). Without
 * parameters: the first 50 hosts by name. A bad parameter is a 400 with field errors.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const query = ZFleetQuery.parse(fleetParamsObject(new URL(request.url).searchParams));
    return json(await queryFleet(getDb(), query));
  } catch (error) {
    return respondError(error, "GET /api/hosts");
  }
}

/** Adds a host and starts its onboarding: 201 `{ hostId, runId }`. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const input = ZCreateHost.parse(await readJson(request));
    return json(await auditedHostCreation(getDb(), actor, input), 201);
  } catch (error) {
    return respondError(error, "POST /api/hosts");
  }
}
