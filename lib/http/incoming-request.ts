import type { IncomingMessage, ServerResponse } from "node:http";

import { rewriteForwardedHeaders, type TrustedProxies } from "./forwarded-headers";
import { strictTransportSecurity } from "./security-headers";

/**
 * What the console's web server does to every request before Next.js sees it: the forwarding
 * headers are made to tell the truth about the connection, and an HTTPS request (as a trusted
 * proxy reports it) is answered with Strict-Transport-Security.
 */
export function prepareIncomingRequest(
  request: IncomingMessage,
  response: ServerResponse,
  trusted: TrustedProxies,
): void {
  rewriteForwardedHeaders(request.headers, request.socket.remoteAddress, trusted);
  const hsts = strictTransportSecurity(request.headers["x-forwarded-proto"]);
  if (hsts !== null) response.setHeader("Strict-Transport-Security", hsts);
}
