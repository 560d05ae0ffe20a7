import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "@/lib/db/client";
import { LIVE_PHASE_MAX, notifyLive } from "@/lib/live/notify";
import { createTestDatabase } from "@/test/db";
import { startTcpRelay } from "@/test/tcp-relay";
import { createLiveListener, type LiveEvent, type LiveListener } from "./listener";

let db: { url: string; drop(): Promise<void> };
let admin: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
});

afterAll(async () => {
  await admin.end();
  await db.drop();
});

const runMessage = {
  type: "run",
  runId: "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f",
  hostId: "1b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f",
};

function collect(listener: LiveListener) {
  const events: LiveEvent[] = [];
  const unsubscribe = listener.subscribe((event) => events.push(event));
  const next = async (predicate: (event: LiveEvent) => boolean, timeoutMs = 10_000) => {
    const start = Date.now();
    for (;;) {
      const found = events.find(predicate);
      if (found) {
        events.splice(events.indexOf(found), 1);
        return found;
      }
      if (Date.now() - start > timeoutMs) throw new Error("no matching live event in time");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { events, next, unsubscribe };
}

const notify = (payload: unknown) =>
  admin.query("select pg_notify('clupilot_live', $1)", [
    typeof payload === "string" ? payload : JSON.stringify(payload),
  ]);

describe("live listener", () => {
  it("fans one notification out to every subscriber over one connection", async () => {
    const listener = createLiveListener({ connectionString: db.url, log: () => {} });
    try {
      const a = collect(listener);
      const b = collect(listener);
      await a.next((e) => e.kind === "status" && e.connected);
      await notify(runMessage);
      expect(await a.next((e) => e.kind === "message")).toEqual({
        kind: "message",
        message: runMessage,
      });
      expect(await b.next((e) => e.kind === "message")).toEqual({
        kind: "message",
        message: runMessage,
      });
      const { rows } = await admin.query(
        "select count(*)::int as n from pg_stat_activity where application_name = 'clupilot-live' and datname = current_database()",
      );
      expect(rows[0].n).toBe(1);
    } finally {
      await listener.close();
    }
  });

  it("drops malformed payloads instead of relaying them", async () => {
    const listener = createLiveListener({ connectionString: db.url, log: () => {} });
    try {
      const sub = collect(listener);
      await sub.next((e) => e.kind === "status" && e.connected);
      await notify("not json");
      await notify({ type: "run", runId: "nope" });
      await notify({ type: "host", hostId: runMessage.hostId });
      const first = await sub.next((e) => e.kind === "message");
      expect(first).toEqual({
        kind: "message",
        message: { type: "host", hostId: runMessage.hostId },
      });
    } finally {
      await listener.close();
    }
  });

  it("reconnects after its connection is killed and tells subscribers it was down", async () => {
    const listener = createLiveListener({
      connectionString: db.url,
      initialBackoffMs: 50,
      log: () => {},
    });
    try {
      const sub = collect(listener);
      await sub.next((e) => e.kind === "status" && e.connected);
      await admin.query(
        "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'clupilot-live' and datname = current_database()",
      );
      await sub.next((e) => e.kind === "status" && !e.connected);
      await sub.next((e) => e.kind === "status" && e.connected);
      await notify(runMessage);
      expect(await sub.next((e) => e.kind === "message")).toEqual({
        kind: "message",
        message: runMessage,
      });
    } finally {
      await listener.close();
    }
  });

  it("drops a half-open connection whose health check goes unanswered, reconnects, and asks only one check at a time", async () => {
    const relay = await startTcpRelay({ host: "127.0.0.1", port: Number(new URL(db.url).port) });
    const lines: string[] = [];
    const listener = createLiveListener({
      connectionString: relay.via(db.url),
      initialBackoffMs: 50,
      healthCheckMs: 200,
      log: (line) => lines.push(line),
    });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const sub = collect(listener);
      await sub.next((e) => e.kind === "status" && e.connected);
      // The peer is gone without a FIN or RST: the socket stays open and no answer ever comes.
      relay.freezeOpenConnections();
      await sub.next((e) => e.kind === "status" && !e.connected, 5_000);
      expect(lines.join("\n")).toMatch(/no answer to its health check within 200 ms/);
      await sub.next((e) => e.kind === "status" && e.connected, 5_000);
      await notify(runMessage);
      expect(await sub.next((e) => e.kind === "message")).toEqual({
        kind: "message",
        message: runMessage,
      });
      // pg warns when a query is sent while the client still runs one: the check never overlaps.
      expect(warnings.filter((w) => /already executing a query/.test(w))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await listener.close();
      await relay.close();
    }
  });

  it("a run message carries the run's committed facts, cut to stay small", async () => {
    const listener = createLiveListener({ connectionString: db.url, log: () => {} });
    const { db: drizzleDb, pool } = createDb(db.url, 1);
    try {
      const sub = collect(listener);
      await sub.next((e) => e.kind === "status" && e.connected);
      const {
        rows: [run],
      } = await admin.query<{ id: string }>(
        `insert into runs (pipeline, current_step, phase) values ('onboard-host', 'InstallProxmoxVe', $1)
         returning id`,
        ["x".repeat(5000)],
      );
      await drizzleDb.transaction(async (tx) => {
        await tx.execute(sql`
          update runs set status = 'failed', failed_step = 'InstallProxmoxVe',
                          failure_reason = 'dpkg was interrupted'
          where id = ${run!.id}`);
        await notifyLive(tx, { type: "run", runId: run!.id, hostId: null });
      });
      const event = await sub.next((e) => e.kind === "message");
      expect(event).toMatchObject({
        kind: "message",
        message: {
          type: "run",
          runId: run!.id,
          hostId: null,
          status: "failed",
          pipeline: "onboard-host",
          step: "InstallProxmoxVe",
          failedStep: "InstallProxmoxVe",
          failureReason: "dpkg was interrupted",
        },
      });
      const message = (event as { message: { phase: string; updatedAt: string } }).message;
      expect(message.phase).toHaveLength(LIVE_PHASE_MAX);
      expect(Number.isNaN(Date.parse(message.updatedAt))).toBe(false);

      // A run that is not (or no longer) there still notifies, with what the caller knew.
      const missing = "2b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";
      await drizzleDb.transaction((tx) =>
        notifyLive(tx, { type: "run", runId: missing, hostId: null }),
      );
      expect(await sub.next((e) => e.kind === "message")).toEqual({
        kind: "message",
        message: { type: "run", runId: missing, hostId: null },
      });
    } finally {
      await pool.end();
      await listener.close();
    }
  });
});
