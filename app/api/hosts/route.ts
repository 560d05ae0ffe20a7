import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
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
export const GET = route(
  "GET /api/hosts",
  {
    role: "viewer",
    summary: "One page of the fleet",
    query: { schema: ZFleetQuery, read: fleetParamsObject },
    errorKeys: "field",
  },
  async ({ query }) => json(await queryFleet(getDb(), query)),
);

/** Adds a host and starts its onboarding: 201 `{ hostId, runId }`. */
export const POST = route(
  "POST /api/hosts",
  {
    role: "operator",
    summary: "Add a host and start its onboarding",
    body: { schema: ZCreateHost, read: "json" },
    // `cluster` is an object: its fields' errors are named by path (`cluster.name`).
    errorKeys: "path",
  },
  async ({ actor, body }) => json(await auditedHostCreation(getDb(), actor, body), 201),
);
