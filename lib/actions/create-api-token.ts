"use server";

import { revalidatePath } from "next/cache";
import { createApiTokenAs, ownUserId } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { ZCreateToken } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type CreateApiTokenResult = ActionResult<{ tokenId: string; token: string; prefix: string }>;

/**
 * Any signed-in user: a personal API token acting with their role. The plaintext is in this
 * result only; the page shows it once and it cannot be read again.
 */
export async function createApiTokenAction(
  _previous: CreateApiTokenResult | null,
  input: FormData | Record<string, unknown>,
): Promise<CreateApiTokenResult> {
  try {
    const actor = await currentActor("viewer");
    const { label } = ZCreateToken.parse(inputObject(input));
    const owner = { id: ownUserId(actor), name: actor.name };
    const created = await createApiTokenAs(getDb(), actor, owner, label);
    revalidatePath("/account");
    return { ok: true, tokenId: created.id, token: created.token, prefix: created.prefix };
  } catch (error) {
    return actionFailure(error, "create API token");
  }
}
