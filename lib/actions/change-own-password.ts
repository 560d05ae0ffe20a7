"use server";

import { changeOwnPasswordAs, ownUserId } from "@/lib/auth/account-operations";
import { sessionCookieToken } from "@/lib/auth/request-context";
import { ZChangeOwnPassword } from "@/lib/auth/schemas";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type ChangeOwnPasswordResult = ActionResult;

/** Any signed-in user: a new password (the current one required); other sessions end. */
export const changeOwnPasswordAction = formAction(
  { name: "change password", role: "viewer", schema: ZChangeOwnPassword },
  async ({ actor, input }) => {
    await changeOwnPasswordAs(
      getDb(),
      { ...actor, userId: ownUserId(actor) },
      { ...input, keepToken: await sessionCookieToken() },
    );
    return {};
  },
);
