import { json, readJson, respondError } from "@/lib/api/respond";
import { createApiTokenAs, ownUserId } from "@/lib/auth/account-operations";
import { requestActor } from "@/lib/auth/actor";
import { listApiTokens } from "@/lib/auth/api-tokens";
import { ZCreateToken } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Your API tokens (prefix, label, created, last used, revoked; never the token). An admin gets
 * everyone's with `?all=1`.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "viewer");
    const all = new URL(request.url).searchParams.get("all") === "1";
    if (all) await requestActor(request, "admin");
    return json(await listApiTokens(getDb(), all ? null : ownUserId(actor)));
  } catch (error) {
    return respondError(error, "GET /api/tokens");
  }
}

/** Creates a token for yourself `{ label }`: 201 `{ id, token, prefix }` (the only time it shows). */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "viewer");
    const { label } = ZCreateToken.parse(await readJson(request));
    const owner = { id: ownUserId(actor), name: actor.name };
    return json(await createApiTokenAs(getDb(), actor, owner, label), 201);
  } catch (error) {
    return respondError(error, "POST /api/tokens");
  }
}
