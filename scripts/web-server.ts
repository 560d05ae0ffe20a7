import path from "node:path";
import next from "next";
import { databaseUrl } from "@/lib/db/client";
import { processReachability } from "@/lib/db/reachability";
import { createDatabaseGate, createDatabaseProbe } from "@/lib/http/database-gate";
import { parseTrustedProxies } from "@/lib/http/forwarded-headers";
import { createConsoleRequestListener } from "@/lib/http/request-listener";
import { createConsoleServer } from "@/lib/http/server";

/**
 * The console's web server: Next.js behind a plain Node HTTP server, so every request's
 * forwarding headers are rewritten from the TCP connection before Next.js (and the sign-in rate
 * limit) reads them — see lib/http/incoming-request.ts — and, while the database is away,
 * requests get a clear 503 instead of failing inside Next.js (lib/http/database-gate.ts).
 * Otherwise what `next start` does.
 *
 * Environment: PORT, HOSTNAME (listen address), NODE_ENV (development = `next dev`),
 * CLUPILOT_TRUSTED_PROXIES (reverse proxies whose X-Forwarded-* headers count).
 */
const root = path.resolve(import.meta.dirname, "..");
const dev = process.env.NODE_ENV === "development";
const port = Number(process.env.PORT ?? 3000);
const hostname = process.env.HOSTNAME ?? "0.0.0.0";

async function main() {
  const trusted = parseTrustedProxies(process.env.CLUPILOT_TRUSTED_PROXIES);
  // However it is started (npm start, systemd, a test): Next.js reports anonymous usage to
  // Vercel unless told not to, and the console sends nothing anywhere by default.
  process.env.NEXT_TELEMETRY_DISABLED = "1";
  const app = next({ dev, dir: root, hostname, port });
  await app.prepare();
  const handle = app.getRequestHandler();
  const probe = createDatabaseProbe(databaseUrl());
  const gate = createDatabaseGate({ probe: probe.probe, reachability: processReachability() });
  const server = createConsoleServer(
    createConsoleRequestListener({
      trusted,
      gate,
      handle: (request, response) => handle(request, response),
      log: (line) => console.error(line),
    }),
  );
  if (dev) server.on("upgrade", app.getUpgradeHandler()); // hot reload's websocket
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, resolve);
  });
  console.log(
    `web server listening on ${hostname}:${port} (${dev ? "development" : "production"}; trusted proxies: ${trusted.described})`,
  );

  const stop = () => {
    // Live streams never end by themselves: close them, or close() would wait forever.
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 5_000).unref();
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
