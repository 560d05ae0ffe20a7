/**
 * `npm run bench:live`: how long a state change committed by the worker takes to reach a
 * browser's live stream. Path measured: COMMIT with pg_notify → the web server's shared LISTEN
 * connection → SSE `/api/live` → client. Runs the production web server (`scripts/web-server.ts`,
 * built first if there is no build) against an embedded Postgres. Baseline in the same run: a
 * bare LISTEN client on the same database (what Postgres itself costs).
 */
import crypto from "node:crypto";
import pg from "pg";
import { createDb } from "@/lib/db/client";
import { invalidateSessionToken } from "@/lib/auth/session";
import { ACCESS_RECHECK_MS } from "@/lib/auth/stream-access";
import { createTestUser } from "@/test/auth";
import { LIVE_CHANNEL } from "@/lib/live/notify";
import { sseEvents } from "@/test/sse";
import { startProductionConsole } from "./support/production-console";
import { percentile, report } from "./support/report";
import { runBench, stopAtEnd } from "./support/run-bench";

const CHANGES = Number(process.env.BENCH_CHANGES ?? 300);

async function main() {
  const server = await startProductionConsole("live");
  const { url, base } = server;
  // /api/live needs a signed-in viewer: a real user and session, as a browser would have.
  const users = createDb(url, 1);
  stopAtEnd("the users' database pool", () => users.pool.end());
  const viewer = await createTestUser(users.db, "viewer");
  const writer = new pg.Client({ connectionString: url });
  const bare = new pg.Client({ connectionString: url });
  const controller = new AbortController();
  stopAtEnd("database clients and the SSE stream", async () => {
    controller.abort();
    await writer.end().catch(() => {});
    await bare.end().catch(() => {});
  });
  await writer.connect();
  await bare.connect();
  const arrivedSse = new Map<string, number>();
  const arrivedBare = new Map<string, number>();
  bare.on("notification", (n) => {
    const id = (JSON.parse(n.payload ?? "{}") as { runId?: string }).runId;
    if (id) arrivedBare.set(id, performance.now());
  });
  await bare.query(`listen ${LIVE_CHANNEL}`);

  // Connect the SSE client once the server answers.
  await server.waitUntilAnswering(
    () =>
      fetch(`${base}/api/hosts`, { headers: viewer.cookieHeaders() }).then(
        (r) => r.ok,
        () => false,
      ),
    30,
  );
  const response = await fetch(`${base}/api/live`, {
    headers: viewer.cookieHeaders(),
    signal: controller.signal,
  });
  if (!response.ok || !response.body) {
    throw new Error(`the console's /api/live answered ${response.status}`);
  }
  const reader = response.body.getReader();
  let listening = false;
  let signedOutAt: number | null = null;
  void (async () => {
    for await (const sse of sseEvents(reader)) {
      if (sse.event === "signed-out") signedOutAt = performance.now();
      if (sse.data?.includes('"listening":true')) listening = true;
      const id = sse.data && (JSON.parse(sse.data) as { runId?: string }).runId;
      if (id) arrivedSse.set(id, performance.now());
    }
  })().catch(() => {}); // the stream is cut when the bench ends
  for (let i = 0; i < 100 && !listening; i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise((resolve) => setTimeout(resolve, 500));

  const sse: number[] = [];
  const direct: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const runId = crypto.randomUUID();
    await writer.query("begin");
    await writer.query("select pg_notify($1, $2)", [
      LIVE_CHANNEL,
      JSON.stringify({ type: "run", runId, hostId: null }),
    ]);
    // From sending COMMIT: listeners can hear the NOTIFY before the writer hears COMMIT's answer
    // (timing from that answer gave negative latencies).
    const committed = performance.now();
    await writer.query("commit");
    const deadline = committed + 5000;
    while ((!arrivedSse.has(runId) || !arrivedBare.has(runId)) && performance.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (arrivedSse.has(runId)) sse.push(arrivedSse.get(runId)! - committed);
    if (arrivedBare.has(runId)) direct.push(arrivedBare.get(runId)! - committed);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  report("changes committed", CHANGES, "changes");
  report("changes delivered over SSE", sse.length, "changes");
  report("baseline bare LISTEN latency p50", percentile(direct, 50), "ms");
  report("baseline bare LISTEN latency p95", percentile(direct, 95), "ms");
  report("commit→SSE latency p50", percentile(sse, 50), "ms");
  report("commit→SSE latency p95", percentile(sse, 95), "ms");
  report("commit→SSE latency max", percentile(sse, 100), "ms");

  // Signing out ends the open stream through the same notification, not at the stream's
  // periodic re-check (ACCESS_RECHECK_MS): the figure the e2e sign-out tests used to bound.
  const signingOut = performance.now();
  await invalidateSessionToken(users.db, viewer.sessionToken);
  const signOutDeadline = signingOut + ACCESS_RECHECK_MS * 2;
  while (signedOutAt === null && performance.now() < signOutDeadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  report(
    "sign-out→signed-out on the open stream",
    signedOutAt === null ? Number.NaN : signedOutAt - signingOut,
    "ms",
  );
  report("baseline periodic access re-check", ACCESS_RECHECK_MS, "ms");
}

runBench(main);
