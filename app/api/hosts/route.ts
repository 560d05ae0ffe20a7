import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { createHost } from "@/lib/hosts/create-host";
import { listHosts } from "@/lib/hosts/list-hosts";
import { ZCreateHost } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Every host with its latest run's summary (no secrets). */
export async function GET(): Promise<Response> {
  try {
    return json(await listHosts(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/hosts");
  }
}

/** Adds a host and starts its onboarding: 201 `{ hostId, runId }`. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = (await requestActor(request, "operator")).name;
    const input = ZCreateHost.parse(await readJson(request));
    return json(await createHost(getDb(), input, actor), 201);
  } catch (error) {
    return respondError(error, "POST /api/hosts");
  }
}
