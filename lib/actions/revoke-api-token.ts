"use server";

import { revokeApiTokenAs } from "@/lib/auth/account-operations";
import { ZRevokeToken } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { action } from "./action";

/** Revokes an API token at once: one's own, or (admin) anyone's. */
export const revokeApiTokenAction = action(
  {
    name: "revoke API token",
    role: "viewer",
    schema: ZRevokeToken,
    revalidate: ["/account", "/users"],
  },
  async ({ actor, input: { tokenId } }) => {
    await revokeApiTokenAs(getDb(), actor, tokenId);
    return { tokenId };
  },
);
