"use server";

import { redirect } from "next/navigation";
import { actionClientOrigin, setSessionCookie } from "@/lib/auth/request-context";
import { createSession } from "@/lib/auth/session";
import { completeSetup, parseSetupInput } from "@/lib/auth/setup";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type CompleteSetupResult = ActionResult;

/**
 * First start: trades the setup token printed by `npm start` for the first admin account and
 * signs that admin in. Works once; afterwards it answers "setup is done, sign in".
 */
export async function completeSetupAction(
  _previous: CompleteSetupResult | null,
  input: FormData | Record<string, unknown>,
): Promise<CompleteSetupResult> {
  try {
    const db = getDb();
    // Every field at once: a wrong token is named beside a refused password, not after it.
    const parsed = await parseSetupInput(db, inputObject(input));
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
  } catch (error) {
    return actionFailure(error, "complete setup");
  }
  redirect("/hosts");
}
