/**
 * The console's browser hardening in one place: proxy.ts sets the per-request
 * Content-Security-Policy (it needs a fresh nonce), next.config.ts sets the fixed headers on
 * every response, static assets and API answers included.
 */

/**
 * The policy for an HTML page. Scripts run only from our origin with this request's nonce, and
 * `'strict-dynamic'` lets those scripts load Next's chunks; no inline script without the nonce
 * runs, so injected markup cannot execute. Style *attributes* stay allowed (`style-src-attr`):
 * React renders `style={…}` (log viewer row heights, a few layouts) into the HTML, and an
 * attribute can set CSS but never run code; `<style>` elements still need the nonce.
 * Development mode needs `'unsafe-eval'` (React's error overlay) and inline styles (hot reload).
 * No `upgrade-insecure-requests`: the console is often reached over plain HTTP on a LAN.
 */
export function pageContentSecurityPolicy(nonce: string, development: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${development ? " 'unsafe-eval'" : ""}`,
    `style-src 'self' ${development ? "'unsafe-inline'" : `'nonce-${nonce}'`}`,
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** For JSON, text and event-stream answers: nothing in them may load or run anything. */
export const API_CONTENT_SECURITY_POLICY =
  "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** Headers every response carries, whatever produced it. */
export const SECURITY_HEADERS: ReadonlyArray<{ key: string; value: string }> = [
  // The URLs name hosts and runs; no other site learns them from a link click.
  { key: "Referrer-Policy", value: "no-referrer" },
  { key: "X-Content-Type-Options", value: "nosniff" },
  // Older browsers that ignore frame-ancestors: no framing (clickjacking of Abort, Retry).
  { key: "X-Frame-Options", value: "DENY" },
  { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
  { key: "Cross-Origin-Resource-Policy", value: "same-origin" },
  {
    key: "Permissions-Policy",
    value: [
      "accelerometer=()",
      "autoplay=()",
      "camera=()",
      "display-capture=()",
      "geolocation=()",
      "gyroscope=()",
      "magnetometer=()",
      "microphone=()",
      "payment=()",
      "usb=()",
      "browsing-topics=()",
    ].join(", "),
  },
];

/** A nonce: 128 random bits, base64 (what CSP's nonce-source grammar accepts). */
export function createNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes));
}

/**
 * `Strict-Transport-Security` for a request that reached the console over HTTPS, else null. Only
 * the TLS terminator's word counts: `X-Forwarded-Proto` survives the web server only from a
 * trusted proxy (lib/http/forwarded-headers.ts), so a client on plain HTTP cannot make a LAN
 * console pin itself to HTTPS. No `includeSubDomains`: the console's domain may serve other
 * machines that have no certificate.
 */
export function strictTransportSecurity(
  forwardedProto: string | string[] | undefined,
): string | null {
  const first = [forwardedProto ?? []].flat()[0]?.split(",")[0]?.trim().toLowerCase();
  return first === "https" ? "max-age=31536000" : null;
}
