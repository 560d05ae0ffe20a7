"use server";

import { resetUserPasswordAs } from "@/lib/auth/account-operations";
import { ZResetPassword } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type ResetPasswordResult = ActionResult<{ userId: string }>;

/** Admin: sets a new password for a user; all of that user's sessions end. */
export const resetUserPasswordAction = formAction(
  { name: "reset password", role: "admin", schema: ZResetPassword, revalidate: ["/users"] },
  async ({ actor, input }) => {
    await resetUserPasswordAs(getDb(), actor, input);
    return { userId: input.userId };
  },
);
