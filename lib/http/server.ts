import http, { type RequestListener } from "node:http";

/**
 * How long the web server keeps an idle kept-alive connection open. Node's default is 5 s, the
 * same as the idle timeout of Node's own client agent (which Playwright's request context and
 * scripts use), and below what reverse proxies keep idle upstream sockets (nginx's `keepalive`
 * 60 s, AWS ALB 60 s): a request a client sends on a socket at the moment the server closes it
 * is lost as ECONNRESET (an e2e run saw one on `GET /api/hosts`). Above those idle timeouts, the
 * client or proxy is the side that closes an idle socket, and it never sends on one it closed.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * The time a client has to send a request's headers, longer than a kept-alive connection may sit
 * idle (as Node's docs advise), so an idle socket is never cut by the header timer first.
 */
export const HEADERS_TIMEOUT_MS = KEEP_ALIVE_TIMEOUT_MS + 1_000;

/** The console's HTTP server around `listener`, with the connection timeouts above. */
export function createConsoleServer(listener: RequestListener): http.Server {
  const server = http.createServer(listener);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  return server;
}
