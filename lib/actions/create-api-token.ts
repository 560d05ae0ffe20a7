"use server";

import { createApiTokenAs, ownUserId } from "@/lib/auth/account-operations";
import { ZCreateToken } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CreateApiTokenResult = ActionResult<{ tokenId: string; token: string; prefix: string }>;

/**
 * Any signed-in user: a personal API token acting with their role. The plaintext is in this
 * result only; the page shows it once and it cannot be read again.
 */
export const createApiTokenAction = formAction(
  { name: "create API token", role: "viewer", schema: ZCreateToken, revalidate: ["/account"] },
  async ({ actor, input: { label } }) => {
    const owner = { id: ownUserId(actor), name: actor.name };
    const created = await createApiTokenAs(getDb(), actor, owner, label);
    return { tokenId: created.id, token: created.token, prefix: created.prefix };
  },
);
