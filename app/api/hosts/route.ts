import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { createHost } from "@/lib/hosts/create-host";
import { listHosts } from "@/lib/hosts/list-hosts";
import { ZCreateHost } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Every host with its latest run's summary (no secrets). */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json(await listHosts(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/hosts");
  }
}

/** Adds a host and starts its onboarding: 201 `{ hostId, runId }`. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const input = ZCreateHost.parse(await readJson(request));
    const db = getDb();
    const created = await audited(
      db,
      {
        actor,
        action: "host.create",
        target: (r) => `host:${r.hostId}`,
        detail: { name: input.name },
      },
      () => createHost(db, input, actor.name),
    );
    return json(created, 201);
  } catch (error) {
    return respondError(error, "POST /api/hosts");
  }
}
