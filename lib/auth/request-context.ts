import { cookies, headers } from "next/headers";
import {
  sessionCookieOptions,
  SESSION_COOKIE,
  cameOverHttps,
  clientAddress,
} from "./session-cookie";

/**
 * Where the current server action's request came from: the client address (the sign-in rate
 * limit counts per it) and the browser's User-Agent (shown in the owner's session list).
 */
export async function actionClientOrigin(): Promise<{ address: string; userAgent: string | null }> {
  const h = await headers();
  return { address: clientAddress(h.get("x-forwarded-for")), userAgent: h.get("user-agent") };
}

/** Sets the session cookie on the current server action's response. */
export async function setSessionCookie(token: string, expiresAt: Date): Promise<void> {
  const h = await headers();
  const secure = cameOverHttps(h.get("origin"), h.get("x-forwarded-proto"));
  (await cookies()).set(SESSION_COOKIE, token, sessionCookieOptions(secure, expiresAt));
}

export async function sessionCookieToken(): Promise<string | undefined> {
  return (await cookies()).get(SESSION_COOKIE)?.value;
}

export async function clearSessionCookie(): Promise<void> {
  (await cookies()).delete(SESSION_COOKIE);
}

/**
 * Where to go after signing in: only a path on this site. `//evil.example` and `/\evil` are
 * protocol-relative to browsers, so they fall back to the hosts list (no open redirect).
 */
export function safeNextPath(next: string | undefined | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) {
    return "/hosts";
  }
  return next;
}
