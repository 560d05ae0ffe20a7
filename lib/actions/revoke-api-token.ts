"use server";

import { revalidatePath } from "next/cache";
import { revokeApiTokenAs } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { ZRevokeToken } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

/** Revokes an API token at once: one's own, or (admin) anyone's. */
export async function revokeApiTokenAction(
  input: FormData | { tokenId: string },
): Promise<ActionResult<{ tokenId: string }>> {
  try {
    const actor = await currentActor("viewer");
    const { tokenId } = ZRevokeToken.parse(inputObject(input));
    await revokeApiTokenAs(getDb(), actor, tokenId);
    revalidatePath("/account");
    revalidatePath("/users");
    return { ok: true, tokenId };
  } catch (error) {
    return actionFailure(error, "revoke API token");
  }
}
