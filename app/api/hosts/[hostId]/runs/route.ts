import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { auditedHostReonboard } from "@/lib/hosts/reonboard-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Onboards the host again: 201 `{ runId }` for the new run; 404 for an unknown host; 409 while
 * its latest run is still running.
 */
export const POST = route(
  "POST /api/hosts/[hostId]/runs",
  { role: "operator", summary: "Onboard a host again", params: { hostId: ZHostId } },
  async ({ actor, params: { hostId } }) =>
    json(await auditedHostReonboard(getDb(), actor, hostId), 201),
);
