import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { revokeApiTokenAs } from "@/lib/auth/account-operations";
import { ZTokenId } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Revokes a token (yours; an admin's: anyone's): 200 `{ id, prefix }`; 404 otherwise. */
export const DELETE = route(
  "DELETE /api/tokens/[tokenId]",
  { role: "viewer", summary: "Revoke an API token", params: { tokenId: ZTokenId } },
  async ({ actor, params: { tokenId } }) => {
    const { id, prefix } = await revokeApiTokenAs(getDb(), actor, tokenId);
    return json({ id, prefix });
  },
);
