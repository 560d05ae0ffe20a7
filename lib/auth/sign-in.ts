import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { clearLoginFailures, reserveLoginAttempt } from "./login-rate-limit";
import { verifyAgainstDummy, verifyPassword } from "./password";
import { createSession, pruneExpiredSessions, type SessionUser } from "./session";
import { findUserByName } from "./users";

export type SignInResult = { user: SessionUser; token: string; expiresAt: Date };

const WRONG = "That user name and password do not match. Check both and try again.";

/**
 * Checks a name and password from `address` and opens a session. Unknown names cost the same
 * Argon2 work as known ones and get the same answer. Throws AppError: rate_limited (429, says
 * when to try again), unauthenticated (wrong name/password, or the account is disabled).
 */
export async function signIn(
  db: Database,
  input: { name: string; password: string; address: string; userAgent?: string | null },
): Promise<SignInResult> {
  const key = { name: input.name, address: input.address };
  // The attempt counts as a failure from here on, unless the password turns out right.
  const gate = await reserveLoginAttempt(db, key);
  if (!gate.allowed) {
    const minutes = Math.ceil(gate.retryAfterMs / 60_000);
    throw new AppError(
      "rate_limited",
      `Too many failed sign-ins for ${input.name} from this address. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}, or ask an admin to reset your password.`,
    );
  }
  const user = await findUserByName(db, input.name);
  const matches = user
    ? await verifyPassword(user.passwordHash, input.password)
    : await verifyAgainstDummy(input.password);
  if (!user || !matches) throw new AppError("unauthenticated", WRONG);
  await clearLoginFailures(db, key);
  if (user.disabled) {
    throw new AppError(
      "unauthenticated",
      "This account is disabled. Ask an admin to enable it again.",
    );
  }
  await pruneExpiredSessions(db);
  const session = await createSession(db, user.id, {
    address: input.address,
    userAgent: input.userAgent ?? null,
  });
  return { user: { id: user.id, name: user.name, role: user.role }, ...session };
}
