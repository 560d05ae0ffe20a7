import http from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, respondError } from "@/lib/api/respond";
import { createDb } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { DATABASE_UNREACHABLE_MESSAGE } from "@/lib/db/unreachable";
import { createLiveListener, type LiveEvent } from "@/lib/live/listener";
import { notifyLive } from "@/lib/live/notify";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { waitFor } from "@/test/worker-process";
import { createDatabaseGate, createDatabaseProbe } from "./database-gate";
import { parseTrustedProxies } from "./forwarded-headers";
import { createConsoleRequestListener } from "./request-listener";

/**
 * The web server while its PostgreSQL restarts (issue 18): the console's request listener (what
 * scripts/web-server.ts puts in front of Next.js) over real HTTP, with routes that read the
 * database the way the console's route handlers do, and the live listener of the open pages.
 */

let postgres: RestartablePostgres;
let app: ReturnType<typeof createDb>;
let probe: ReturnType<typeof createDatabaseProbe>;
let server: http.Server;
let base: string;
const logged: string[] = [];
/** Requests that got past the gate to "Next.js". */
let reachedApp = 0;

/** Stands in for Next.js: a page and API routes that read the database, answering like ours. */
async function consoleApp(request: http.IncomingMessage, response: http.ServerResponse) {
  reachedApp += 1;
  const path = (request.url ?? "/").split("?")[0]!;
  if (path.startsWith("/_next/static/")) {
    response.writeHead(200, { "Content-Type": "text/javascript" }).end("// asset");
    return;
  }
  let answer: Response;
  try {
    if (path === "/api/slow") {
      await app.db.execute(sql`select pg_sleep(5)`);
      answer = json({ slept: true });
    } else {
      const { rows } = await app.db.execute<{ n: number }>(
        sql`select count(*)::int as n from runs`,
      );
      answer =
        path === "/"
          ? new Response(`<h1>Hosts</h1><p>${rows[0]!.n} runs</p>`, {
              headers: { "Content-Type": "text/html" },
            })
          : json({ runs: rows[0]!.n });
    }
  } catch (error) {
    answer = respondError(error, `GET ${path}`);
  }
  response.writeHead(answer.status, Object.fromEntries(answer.headers));
  response.end(await answer.text());
}

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  // One view of the database for the app's pool and the gate, as processReachability() is.
  const reachability = trackReachability({ log: (line) => logged.push(line), meanwhile: "503" });
  app = createDb(postgres.url, 4, reachability);
  probe = createDatabaseProbe(postgres.url);
  const gate = createDatabaseGate({ probe: probe.probe, reachability });
  server = http.createServer(
    createConsoleRequestListener({
      trusted: parseTrustedProxies(undefined),
      gate,
      handle: consoleApp,
      log: (line) => logged.push(line),
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await probe?.close();
  await app?.pool.end();
  await postgres?.close();
});

/** A request that must be answered (a hang fails the test after 10 s). */
const get = (path: string, accept = "application/json") =>
  fetch(`${base}${path}`, { headers: { accept }, signal: AbortSignal.timeout(10_000) });

const PAGE = "text/html,application/xhtml+xml";

describe("the web server while PostgreSQL is away", () => {
  it("answers pages and API calls with a clear 503 before Next.js sees them, serves assets, and recovers by itself", async () => {
    const before = await get("/api/runs");
    expect(before.status, `${await before.text()}\n${logged.join("\n")}`).toBe(200);
    expect((await get("/", PAGE)).status).toBe(200);
    const linesBefore = logged.length;

    await postgres.stop("fast");
    // Within a second the gate asks the database itself; from then on nothing reaches the app.
    await waitFor("the gate to notice", async () => (await get("/api/runs")).status === 503);
    const reachedBefore = reachedApp;

    const api = await get("/api/runs");
    expect(api.status).toBe(503);
    expect(api.headers.get("retry-after")).toBe("5");
    expect(api.headers.get("cache-control")).toBe("no-store");
    expect(await api.json()).toEqual({ error: DATABASE_UNREACHABLE_MESSAGE, fieldErrors: {} });

    const page = await get("/hosts", PAGE);
    expect(page.status).toBe(503);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toMatch(
      /default-src 'none'; style-src 'sha256-/,
    );
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const html = await page.text();
    expect(html).toContain("The console's database is unreachable");
    expect(html).toContain('<meta http-equiv="refresh" content="5">');
    expect(html).not.toContain("<script");

    const action = await get("/hosts", "text/x-component");
    expect(action.status).toBe(503);
    expect(await action.text()).toBe(DATABASE_UNREACHABLE_MESSAGE);

    expect(reachedApp).toBe(reachedBefore);
    const asset = await get("/_next/static/chunks/app.js", "*/*");
    expect(asset.status).toBe(200);

    await postgres.start();
    await waitFor(
      "the console to answer again",
      async () => (await get("/api/runs")).status === 200,
      20_000,
    );
    expect((await get("/", PAGE)).status).toBe(200);

    const lines = logged.slice(linesBefore);
    expect(lines.filter((line) => line.startsWith("database unreachable ("))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith("database reachable again after"))).toHaveLength(
      1,
    );
    expect(lines.filter((line) => line.startsWith("request "))).toEqual([]);
  }, 120_000);

  it("a request in flight when the postmaster is killed gets the 503 answer, not a 500", async () => {
    await waitFor("the console to answer", async () => (await get("/api/runs")).status === 200);
    const inFlight = get("/api/slow");
    await waitFor("the slow query to run", async () => {
      const { rows } = await app.db.execute<{ n: number }>(
        sql`select count(*)::int as n from pg_stat_activity where query like 'select pg_sleep%'`,
      );
      return rows[0]!.n > 0;
    });
    await postgres.stop("kill");
    const answer = await inFlight;
    expect(answer.status).toBe(503);
    expect(await answer.json()).toEqual({ error: DATABASE_UNREACHABLE_MESSAGE, fieldErrors: {} });

    await postgres.start();
    await waitFor(
      "the console to answer again",
      async () => (await get("/api/runs")).status === 200,
      20_000,
    );
  }, 120_000);
});

describe("the open pages' live listener across a PostgreSQL restart", () => {
  it("reports the loss, reconnects by itself once the database is back, and delivers what is notified then", async () => {
    const lines: string[] = [];
    const listener = createLiveListener({
      connectionString: postgres.url,
      log: (line) => lines.push(line),
    });
    const events: LiveEvent[] = [];
    listener.subscribe((event) => events.push(event));
    try {
      await waitFor("the listener to connect", async () => listener.connected);
      await postgres.stop("kill");
      await waitFor("the listener to notice", async () =>
        events.some((e) => e.kind === "status" && !e.connected),
      );
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // several refused attempts
      await postgres.start();
      // Status `connected: true` is what makes an open page re-read everything it shows.
      await waitFor("the listener to reconnect", async () => listener.connected, 20_000);
      const runId = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";
      await app.db.transaction((tx) => notifyLive(tx, { type: "log", runId, seq: 7 }));
      await waitFor("the notification", async () =>
        events.some((e) => e.kind === "message" && e.message.type === "log"),
      );
      expect(
        events.filter((e) => e.kind === "status").map((e) => e.kind === "status" && e.connected),
      ).toEqual([true, false, true]);
      expect(lines.filter((line) => line.startsWith("live listener lost"))).toHaveLength(1);
      expect(lines.filter((line) => line.startsWith("live listener reconnected"))).toHaveLength(1);
    } finally {
      await listener.close();
    }
  }, 120_000);
});
