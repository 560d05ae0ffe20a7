"use server";

import { redirect } from "next/navigation";
import { actionClientOrigin, safeNextPath, setSessionCookie } from "@/lib/auth/request-context";
import { ZSignIn } from "@/lib/auth/schemas";
import { signIn } from "@/lib/auth/sign-in";
import { recordAudit } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type SignInResult = ActionResult;

/**
 * Signs in with name and password and goes to `next` (or the hosts list). Every attempt is
 * audited: success, failure (wrong name/password, disabled) or denied (rate limited).
 */
export const signInAction = formAction(
  { name: "sign in", role: null, schema: ZSignIn },
  async ({ input }): Promise<never> => {
    const next = safeNextPath(input.next);
    const db = getDb();
    try {
      const session = await signIn(db, { ...input, ...(await actionClientOrigin()) });
      await setSessionCookie(session.token, session.expiresAt);
      await recordAudit(db, {
        actor: { userId: session.user.id, name: session.user.name },
        action: "auth.sign_in",
        target: `user:${session.user.name}`,
        outcome: "success",
      });
    } catch (error) {
      const limited = error instanceof AppError && error.code === "rate_limited";
      await recordAudit(db, {
        actor: { userId: null, name: input.name },
        action: "auth.sign_in",
        target: `user:${input.name}`,
        outcome: limited ? "denied" : "failure",
        detail: { reason: error instanceof AppError ? error.message : "unexpected error" },
      });
      throw error;
    }
    redirect(next);
  },
);
