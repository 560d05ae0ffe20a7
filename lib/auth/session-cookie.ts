/** The cookie holding the session token (httpOnly: page scripts never see it). */
export const SESSION_COOKIE = "clupilot_session";

/**
 * Whether the browser reached us over HTTPS: directly (the URL) or through a TLS-terminating
 * proxy (`X-Forwarded-Proto`). Then the cookie is `Secure`; over plain HTTP on a LAN it cannot
 * be, or the browser would never send it back.
 */
export function cameOverHttps(url: string | null, forwardedProto: string | null): boolean {
  if (forwardedProto) return forwardedProto.split(",")[0]!.trim().toLowerCase() === "https";
  return url?.startsWith("https:") ?? false;
}

export function sessionCookieOptions(secure: boolean, expires: Date) {
  return { httpOnly: true, sameSite: "lax", secure, path: "/", expires } as const;
}

/**
 * The client address rate limits count per. Next.js sets `X-Forwarded-For` from the socket when
 * no proxy did; behind a proxy, that proxy appends the peer it saw. The last entry is therefore
 * the one a client cannot choose (entries before it are whatever the client sent).
 */
export function clientAddress(forwardedFor: string | null, realIp: string | null): string {
  const last = forwardedFor?.split(",").at(-1)?.trim();
  return last || realIp?.trim() || "unknown";
}
