"use server";

import { redirect } from "next/navigation";
import { currentActor } from "@/lib/auth/actor";
import { clearSessionCookie, sessionCookieToken } from "@/lib/auth/request-context";
import { invalidateSessionToken } from "@/lib/auth/session";
import { recordAudit } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";

/** Ends this browser's session (the row is deleted, not only the cookie) and shows sign-in. */
export async function signOutAction(): Promise<void> {
  const db = getDb();
  const token = await sessionCookieToken();
  const actor = await currentActor("viewer").catch((error: unknown) => {
    if (error instanceof AppError) return null; // signed out already: just clear the cookie
    throw error;
  });
  if (token) await invalidateSessionToken(db, token);
  await clearSessionCookie();
  if (actor) {
    await recordAudit(db, {
      actor,
      action: "auth.sign_out",
      target: `user:${actor.name}`,
      outcome: "success",
    });
  }
  redirect("/login");
}
