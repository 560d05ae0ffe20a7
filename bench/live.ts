/**
 * `npm run bench:live`: how long a state change committed by the worker takes to reach a
 * browser's live stream. Path measured: COMMIT with pg_notify → the web server's shared LISTEN
 * connection → SSE `/api/live` → client. Runs the production web server (`scripts/web-server.ts`) against an
 * embedded Postgres; needs `npm run build` first. Baseline in the same run: a bare LISTEN
 * client on the same database (what Postgres itself costs).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { createDb } from "@/lib/db/client";
import { createTestUser } from "@/test/auth";
import { LIVE_CHANNEL } from "@/lib/pipeline/schedule";
import { report } from "./support/report";
import { startProductionConsole } from "./support/production-console";
import { sseEvents } from "@/test/sse";

const CHANGES = Number(process.env.BENCH_CHANGES ?? 300);
const root = path.resolve(import.meta.dirname, "..");

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main() {
  if (!fs.existsSync(path.join(root, ".next", "BUILD_ID"))) {
    throw new Error("no production build: run `npm run build` first");
  }
  const server = await startProductionConsole("live");
  const { url, base } = server;
  // /api/live needs a signed-in viewer: a real user and session, as a browser would have.
  const users = createDb(url, 1);
  const viewer = await createTestUser(users.db, "viewer");
  await users.pool.end();
  const writer = new pg.Client({ connectionString: url });
  const bare = new pg.Client({ connectionString: url });
  const controller = new AbortController();
  try {
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
    let response: Response | undefined;
    for (let i = 0; i < 200 && !response; i++) {
      response = await fetch(`${base}/api/live`, {
        headers: viewer.cookieHeaders(),
        signal: controller.signal,
      }).catch(() => undefined);
      if (!response) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!response?.body) throw new Error("the console's /api/live did not answer");
    const reader = response.body.getReader();
    let listening = false;
    void (async () => {
      for await (const sse of sseEvents(reader)) {
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
      await writer.query("commit");
      const committed = performance.now();
      const deadline = committed + 5000;
      while ((!arrivedSse.has(runId) || !arrivedBare.has(runId)) && performance.now() < deadline) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (arrivedSse.has(runId)) sse.push(arrivedSse.get(runId)! - committed);
      if (arrivedBare.has(runId)) direct.push(arrivedBare.get(runId)! - committed);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    sse.sort((a, b) => a - b);
    direct.sort((a, b) => a - b);
    report("changes committed", CHANGES, "changes");
    report("changes delivered over SSE", sse.length, "changes");
    report("baseline bare LISTEN latency p50", percentile(direct, 50), "ms");
    report("baseline bare LISTEN latency p95", percentile(direct, 95), "ms");
    report("commit→SSE latency p50", percentile(sse, 50), "ms");
    report("commit→SSE latency p95", percentile(sse, 95), "ms");
    report("commit→SSE latency max", sse[sse.length - 1] ?? NaN, "ms");
  } finally {
    controller.abort();
    await writer.end().catch(() => {});
    await bare.end().catch(() => {});
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    console.error(error.message);
    process.exit(1);
  },
);
