"use server";

import { revalidatePath } from "next/cache";
import { resetUserPasswordAs } from "@/lib/auth/account-operations";
import { currentActor } from "@/lib/auth/actor";
import { ZResetPassword } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type ResetPasswordResult = ActionResult<{ userId: string }>;

/** Admin: sets a new password for a user; all of that user's sessions end. */
export async function resetUserPasswordAction(
  _previous: ResetPasswordResult | null,
  input: FormData | Record<string, unknown>,
): Promise<ResetPasswordResult> {
  try {
    const actor = await currentActor("admin");
    const parsed = ZResetPassword.parse(inputObject(input));
    await resetUserPasswordAs(getDb(), actor, parsed);
    revalidatePath("/users");
    return { ok: true, userId: parsed.userId };
  } catch (error) {
    return actionFailure(error, "reset password");
  }
}
