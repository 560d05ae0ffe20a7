import { json, parseId, respondError } from "@/lib/api/respond";
import { revokeApiTokenAs } from "@/lib/auth/account-operations";
import { requestActor } from "@/lib/auth/actor";
import { ZTokenId } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Revokes a token (yours; an admin's: anyone's): 200 `{ id, prefix }`; 404 otherwise. */
export async function DELETE(
  request: Request,
  { params }: { params: Promise<{ tokenId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "viewer");
    const tokenId = parseId(ZTokenId, (await params).tokenId, "tokenId");
    const { id, prefix } = await revokeApiTokenAs(getDb(), actor, tokenId);
    return json({ id, prefix });
  } catch (error) {
    return respondError(error, "DELETE /api/tokens/[tokenId]");
  }
}
