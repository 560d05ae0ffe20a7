import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { isDatabaseUnreachable } from "@/lib/db/unreachable";
import { safeErrorSummary } from "@/lib/errors";
import type { DatabaseGate } from "./database-gate";
import { answerDatabaseUnreachable, needsDatabase } from "./database-unreachable";
import type { TrustedProxies } from "./forwarded-headers";
import { prepareIncomingRequest } from "./incoming-request";

/**
 * The console's web server in front of Next.js (`handle`), for every request: the forwarding
 * headers made truthful (prepareIncomingRequest), then a 503 at once while the database is away
 * (the gate), else Next.js. What Next.js itself lets through is logged by path (never the query
 * string: the client's to fill, with anything in it) and answered 503 or 500.
 */
export function createConsoleRequestListener(options: {
  trusted: TrustedProxies;
  gate: DatabaseGate;
  handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>;
  log: (line: string) => void;
}): RequestListener {
  const serve = async (request: IncomingMessage, response: ServerResponse) => {
    try {
      if (needsDatabase(request.url) && !(await options.gate.reachable())) {
        answerDatabaseUnreachable(request, response);
        return;
      }
      await options.handle(request, response);
    } catch (error) {
      const unreachable = isDatabaseUnreachable(error);
      if (unreachable) options.gate.reachability.lost(error);
      else {
        const where = (request.url ?? "/").split("?")[0];
        options.log(`request ${request.method} ${where} failed: ${safeErrorSummary(error)}`);
      }
      if (response.headersSent) response.end();
      else if (unreachable) answerDatabaseUnreachable(request, response);
      else response.writeHead(500).end();
    }
  };
  return (request, response) => {
    prepareIncomingRequest(request, response, options.trusted);
    void serve(request, response);
  };
}
