"use server";

import { redirect } from "next/navigation";
import { z } from "zod";
import { actionClientOrigin, setSessionCookie } from "@/lib/auth/request-context";
import { createSession } from "@/lib/auth/session";
import { completeSetup, parseSetupInput } from "@/lib/auth/setup";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CompleteSetupResult = ActionResult;

/**
 * First start: trades the setup token printed by `npm start` for the first admin account and
 * signs that admin in. Works once; afterwards it answers "setup is done, sign in". Nobody is
 * signed in yet, so the audit row names the admin being created. The fields are judged by
 * parseSetupInput, not the wrapper's schema: every field at once, a wrong token named beside a
 * refused password, not after it.
 */
export const completeSetupAction = formAction(
  { name: "complete setup", role: null, schema: z.record(z.string(), z.unknown()) },
  async ({ input }): Promise<never> => {
    const db = getDb();
    const parsed = await parseSetupInput(db, input);
    const admin = await audited(
      db,
      {
        actor: { userId: null, name: parsed.name },
        action: "auth.setup",
        target: `user:${parsed.name}`,
      },
      () => completeSetup(db, parsed),
    );
    const session = await createSession(db, admin.id, await actionClientOrigin());
    await setSessionCookie(session.token, session.expiresAt);
    redirect("/hosts");
  },
);
