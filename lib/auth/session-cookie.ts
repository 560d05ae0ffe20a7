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
 * The client address rate limits count per. The web server (scripts/web-server.ts) has already
 * replaced `X-Forwarded-For` with the one address it resolved from the connection and the
 * trusted proxies (lib/http/forwarded-headers.ts); the last entry is read in case a request
 * reaches this code another way, as that is the one a client can least choose.
 */
export function clientAddress(forwardedFor: string | null): string {
  return forwardedFor?.split(",").at(-1)?.trim() || "unknown";
}
