import crypto from "node:crypto";
import type { Role } from "@/lib/roles";
import { createApiToken } from "@/lib/auth/api-tokens";
import { createSession } from "@/lib/auth/session";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { createUser, type UserSummary } from "@/lib/auth/users";
import type { Database } from "@/lib/db/client";

export type TestUser = {
  user: UserSummary;
  password: string;
  /** A personal API token of the user (plaintext, as shown once on creation). */
  token: string;
  /** A session token of the user, as the browser's cookie carries it. */
  sessionToken: string;
  /** `Cookie:` header value that signs the user in. */
  cookieHeader: string;
  /** Headers for a route handler call authenticated by the API token. */
  authHeaders(extra?: Record<string, string>): Record<string, string>;
  /** The same with the session cookie instead of the token. */
  cookieHeaders(extra?: Record<string, string>): Record<string, string>;
};

/**
 * A real user of `role` with a real session and API token, for calling route handlers and
 * server actions as that user. Names are random so one test database holds many.
 */
export async function createTestUser(
  db: Database,
  role: Role,
  options: { name?: string; password?: string } = {},
): Promise<TestUser> {
  const name = options.name ?? `${role}-${crypto.randomBytes(4).toString("hex")}`;
  const password = options.password ?? `pw-${crypto.randomBytes(12).toString("hex")}`;
  const user = await createUser(db, { name, role, password });
  const { token } = await createApiToken(db, user.id, "test");
  const { token: sessionToken } = await createSession(db, user.id);
  const cookieHeader = `${SESSION_COOKIE}=${sessionToken}`;
  return {
    user,
    password,
    token,
    sessionToken,
    cookieHeader,
    authHeaders: (extra = {}) => ({ ...extra, authorization: `Bearer ${token}` }),
    cookieHeaders: (extra = {}) => ({ ...extra, cookie: cookieHeader }),
  };
}
