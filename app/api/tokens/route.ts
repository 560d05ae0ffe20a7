import { z } from "zod";
import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { createApiTokenAs, ownUserId } from "@/lib/auth/account-operations";
import { requestActor } from "@/lib/auth/actor";
import { listApiTokens } from "@/lib/auth/api-tokens";
import { ZCreateToken } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** `?all=1`: everyone's tokens (admins); any other value, or none: your own. */
const ZTokensQuery = z.object({ all: z.string().optional() });

/**
 * Your API tokens (prefix, label, created, last used, revoked; never the token). An admin gets
 * everyone's with `?all=1`.
 */
export const GET = route(
  "GET /api/tokens",
  {
    role: "viewer",
    summary: "Your API tokens (an admin's: everyone's)",
    query: { schema: ZTokensQuery },
  },
  async ({ request, actor, query }) => {
    const all = query.all === "1";
    if (all) await requestActor(request, "admin");
    return json(await listApiTokens(getDb(), all ? null : ownUserId(actor)));
  },
);

/** Creates a token for yourself `{ label }`: 201 `{ id, token, prefix }` (the only time it shows). */
export const POST = route(
  "POST /api/tokens",
  {
    role: "viewer",
    summary: "Create an API token for yourself",
    body: { schema: ZCreateToken, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, body: { label } }) => {
    const owner = { id: ownUserId(actor), name: actor.name };
    return json(await createApiTokenAs(getDb(), actor, owner, label), 201);
  },
);
