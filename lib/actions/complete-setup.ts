"use server";

import { redirect } from "next/navigation";
import { actionClientOrigin, setSessionCookie } from "@/lib/auth/request-context";
import { ZCompleteSetup } from "@/lib/auth/schemas";
import { createSession } from "@/lib/auth/session";
import { completeSetup } from "@/lib/auth/setup";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CompleteSetupResult = ActionResult;

/**
 * First start: trades the setup token printed by `npm start` for the first admin account and
 * signs that admin in. Works once; afterwards it answers "setup is done, sign in". Nobody is
 * signed in yet, so the audit row names the admin being created.
 */
export const completeSetupAction = formAction(
  { name: "complete setup", role: null, schema: ZCompleteSetup },
  async ({ input }): Promise<never> => {
    const db = getDb();
    const admin = await audited(
      db,
      {
        actor: { userId: null, name: input.name },
        action: "auth.setup",
        target: `user:${input.name}`,
      },
      () => completeSetup(db, input),
    );
    const session = await createSession(db, admin.id, await actionClientOrigin());
    await setSessionCookie(session.token, session.expiresAt);
    redirect("/hosts");
  },
);
