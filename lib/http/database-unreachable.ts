import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { DATABASE_UNREACHABLE_MESSAGE } from "@/lib/db/unreachable";
import { API_CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from "./security-headers";

/** How soon a client should ask again; the page reloads itself this often. */
export const RETRY_AFTER_SECONDS = 5;

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f6f7f9;color:#1d2433}main{max-width:34rem;padding:2rem;background:#fff;border:1px solid #d8dde6;border-radius:8px}h1{font-size:1.25rem;margin:0 0 .75rem}p{margin:.5rem 0}`;

/**
 * The page a browser gets while the database is away: what happened, that the console retries
 * by itself, and a reload every RETRY_AFTER_SECONDS (a meta refresh: no script), so an open tab
 * shows the console again as soon as the database answers. It bypasses Next.js, so it carries
 * the console's hardening headers itself; its one inline style is allowed by its hash.
 */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${RETRY_AFTER_SECONDS}">
<title>Database unreachable · CluPilot</title>
<style>${STYLE}</style>
</head>
<body>
<main role="alert">
<h1>The console's database is unreachable</h1>
<p>PostgreSQL is restarting or down. Nothing is lost: the console keeps retrying by itself, and
this page reloads every ${RETRY_AFTER_SECONDS} seconds until the console is back.</p>
<p>If it lasts, check the database; the console's log says why it cannot connect.</p>
</main>
</body>
</html>
`;

const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`,
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/** Built assets never touch the database: they are served while it is away. */
export function needsDatabase(url: string | undefined): boolean {
  const path = (url ?? "/").split("?")[0]!;
  return !(path.startsWith("/_next/static/") || path === "/icon.svg" || path === "/favicon.ico");
}

/**
 * Answers a request with 503 because the database is away: the JSON API's error shape
 * (`{ error, fieldErrors }`) under /api, the page above for a browser, plain text otherwise
 * (server actions, router fetches).
 */
export function answerDatabaseUnreachable(
  request: IncomingMessage,
  response: ServerResponse,
): void {
  const path = (request.url ?? "/").split("?")[0]!;
  const wantsPage = /\btext\/html\b/.test(request.headers.accept ?? "");
  const [type, body, policy] = path.startsWith("/api/")
    ? [
        "application/json",
        JSON.stringify({ error: DATABASE_UNREACHABLE_MESSAGE, fieldErrors: {} }),
        API_CONTENT_SECURITY_POLICY,
      ]
    : wantsPage
      ? ["text/html; charset=utf-8", PAGE, PAGE_CONTENT_SECURITY_POLICY]
      : ["text/plain; charset=utf-8", DATABASE_UNREACHABLE_MESSAGE, API_CONTENT_SECURITY_POLICY];
  for (const { key, value } of SECURITY_HEADERS) response.setHeader(key, value);
  response.writeHead(503, {
    "Content-Type": type,
    "Content-Security-Policy": policy,
    "Cache-Control": "no-store",
    "Retry-After": String(RETRY_AFTER_SECONDS),
  });
  response.end(request.method === "HEAD" ? undefined : body);
}
