"use server";

import { changeOwnPasswordAs, ownUserId } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { sessionCookieToken } from "@/lib/auth/request-context";
import { ZChangeOwnPassword } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type ChangeOwnPasswordResult = ActionResult;

/** Any signed-in user: a new password (the current one required); other sessions end. */
export async function changeOwnPasswordAction(
  _previous: ChangeOwnPasswordResult | null,
  input: FormData | Record<string, unknown>,
): Promise<ChangeOwnPasswordResult> {
  try {
    const actor = await currentActor("viewer");
    const parsed = ZChangeOwnPassword.parse(inputObject(input));
    await changeOwnPasswordAs(
      getDb(),
      { ...actor, userId: ownUserId(actor) },
      { ...parsed, keepToken: await sessionCookieToken() },
    );
    return { ok: true };
  } catch (error) {
    return actionFailure(error, "change password");
  }
}
