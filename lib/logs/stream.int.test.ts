import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runLogChunks, runs } from "@/lib/db/schema";
import { createLiveListener, type LiveListener } from "@/lib/live/listener";
import { notifyLive } from "@/lib/live/notify";
import { registerTestDatabase } from "@/test/db";
import { appendRunLog } from "./append";
import type { LogEntry } from "./chunks";
import type { LogChunk } from "./chunks";
import { readLogHead, readLogTail, readRawBytes } from "./read";
import { createRunLogStream } from "./stream";
import { createRunLogWriter } from "./writer";
import { sseEvents } from "@/test/sse";

const testDatabase = registerTestDatabase(8);
let listener: LiveListener;

beforeAll(() => {
  listener = createLiveListener({ connectionString: testDatabase.url, log: () => {} });
});
afterAll(() => listener.close());

async function newRun(): Promise<string> {
  const [run] = await testDatabase.db
    .insert(runs)
    .values({ pipeline: "test", currentStep: "S" })
    .returning({ id: runs.id });
  return run!.id;
}

const lines = (prefix: string, n: number, kind: LogEntry["kind"] = "output"): LogEntry[] =>
  Array.from({ length: n }, (_, i) => ({
    step: "S",
    kind,
    text: `${prefix} ${i}`,
    at: new Date(),
  }));

async function rawLog(runId: string): Promise<string> {
  const head = await readLogHead(testDatabase.db, runId);
  const parts: Buffer[] = [];
  for await (const part of readRawBytes(testDatabase.db, runId, 0, head.bytes - 1, 3))
    parts.push(part);
  return Buffer.concat(parts).toString("utf8");
}

type Event = { event: string; id?: number; data: unknown };

/** Reads SSE events until `until` says stop (or the stream ends). */
async function readEvents(
  stream: ReadableStream<Uint8Array>,
  until: (events: Event[]) => boolean,
): Promise<{ events: Event[]; ended: boolean }> {
  const reader = stream.getReader();
  const events: Event[] = [];
  try {
    if (until(events)) return { events, ended: false };
    for await (const sse of sseEvents(reader)) {
      if (sse.event === null) continue;
      events.push({
        event: sse.event,
        id: sse.id === null ? undefined : Number(sse.id),
        data: JSON.parse(sse.data ?? "null"),
      });
      if (until(events)) return { events, ended: false };
    }
    return { events, ended: true };
  } finally {
    reader.releaseLock();
  }
}

describe("run log storage", () => {
  it("numbers chunks without gaps under concurrent writers, and the raw log is their text in order", async () => {
    const runId = await newRun();
    await Promise.all(
      Array.from({ length: 6 }, (_, w) =>
        (async () => {
          for (let b = 0; b < 5; b++)
            await appendRunLog(testDatabase.db, runId, lines(`w${w} b${b}`, 7));
        })(),
      ),
    );
    const chunks = await testDatabase.db
      .select()
      .from(runLogChunks)
      .where(eq(runLogChunks.runId, runId))
      .orderBy(asc(runLogChunks.seq));
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i + 1));
    let line = 1;
    let byte = 0;
    for (const chunk of chunks) {
      expect(chunk.firstLine).toBe(line);
      expect(chunk.firstByte).toBe(byte);
      line += chunk.lineCount;
      byte += chunk.bytes;
    }
    expect(await readLogHead(testDatabase.db, runId)).toMatchObject({ lines: 210, bytes: byte });
    expect(await rawLog(runId)).toBe(chunks.map((c) => c.text).join(""));
  });

  it("reads any byte range of the raw log", async () => {
    const runId = await newRun();
    await appendRunLog(testDatabase.db, runId, lines("ünïcödé line", 50));
    const full = Buffer.from(await rawLog(runId));
    for (const [start, end] of [
      [0, 0],
      [5, 77],
      [100, full.length - 1],
      [full.length - 10, full.length - 1],
    ] as const) {
      const parts: Buffer[] = [];
      for await (const part of readRawBytes(testDatabase.db, runId, start, end, 2))
        parts.push(part);
      expect(Buffer.concat(parts).equals(full.subarray(start, end + 1))).toBe(true);
    }
  });

  it("keeps the last lines for the run detail, numbered run-wide", async () => {
    const runId = await newRun();
    await appendRunLog(testDatabase.db, runId, lines("x", 30));
    const tail = await readLogTail(testDatabase.db, runId, 5);
    expect(tail.map((l) => [l.line, l.text])).toEqual([
      [26, "x 25"],
      [27, "x 26"],
      [28, "x 27"],
      [29, "x 28"],
      [30, "x 29"],
    ]);
  });

  it("stores a command that carries a secret masked, and masks the writer's known secrets", async () => {
    const runId = await newRun();
    const writer = createRunLogWriter(testDatabase.db, runId, { flushIntervalMs: 10 });
    writer.maskSecret("Sup3r-Secret-Pw");
    writer.line(
      "S",
      "command",
      "▶ S 00:00:00.000Z $ pvesh create /access/users --password hunter22",
    );
    writer.line("S", "output", "echoed Sup3r-Secret-Pw back");
    await writer.close();
    const text = await rawLog(runId);
    expect(text).not.toContain("hunter22");
    expect(text).not.toContain("Sup3r-Secret-Pw");
    expect(text).toContain("--password ***");
    expect(text).toContain("echoed *** back");
  });

  it("enforces the per-run cap across appends with one marker", async () => {
    const runId = await newRun();
    const limits = { capBytes: 100 };
    await appendRunLog(testDatabase.db, runId, lines("0123456789", 5), { limits });
    await appendRunLog(testDatabase.db, runId, lines("0123456789", 20), { limits });
    await appendRunLog(
      testDatabase.db,
      runId,
      [{ step: "S", kind: "run", text: "■ run failed", at: new Date() }],
      {
        limits,
      },
    );
    const text = await rawLog(runId);
    expect(text.match(/log cap of 100 B reached/g)).toHaveLength(1);
    expect(text.trimEnd().split("\n").at(-1)).toBe("■ run failed");
    expect((await readLogHead(testDatabase.db, runId)).truncated).toBe(true);
  });
});

describe("the live log stream", () => {
  it("sends the backlog, then new chunks live; a resumed stream continues after Last-Event-ID with no duplicate and no gap; it ends when the run stops", async () => {
    const runId = await newRun();
    for (let i = 0; i < 4; i++) await appendRunLog(testDatabase.db, runId, lines(`before ${i}`, 3));

    // First viewer: the backlog, then one live chunk, then the connection drops.
    const first = new AbortController();
    const stream1 = createRunLogStream({
      db: testDatabase.db,
      listener,
      runId,
      afterSeq: 0,
      signal: first.signal,
    });
    const appender = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await appendRunLog(testDatabase.db, runId, lines("live", 2));
    })();
    const chunksOf = (events: { event: string }[]) => events.filter((e) => e.event === "chunk");
    const got1 = await readEvents(stream1, (events) => chunksOf(events).length >= 5);
    first.abort();
    await appender;
    const chunks1 = chunksOf(got1.events) as typeof got1.events;
    const lastId = chunks1.at(-1)!.id!;
    expect(chunks1.map((e) => e.id)).toEqual([1, 2, 3, 4, 5]);
    // After the backlog (4 chunks) the stream says it is live.
    expect(got1.events.map((e) => e.event).indexOf("live")).toBeGreaterThanOrEqual(4);

    // Meanwhile more is written; the browser reconnects with Last-Event-ID = lastId.
    for (let i = 0; i < 3; i++)
      await appendRunLog(testDatabase.db, runId, lines(`while away ${i}`, 2));
    const second = new AbortController();
    const stream2 = createRunLogStream({
      db: testDatabase.db,
      listener,
      runId,
      afterSeq: lastId,
      signal: second.signal,
    });
    const finisher = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await testDatabase.db.transaction(async (tx) => {
        await appendRunLog(tx, runId, [
          { step: "S", kind: "run", text: "■ run aborted by operator during S", at: new Date() },
        ]);
        await tx.update(runs).set({ status: "failed" }).where(eq(runs.id, runId));
        await notifyLive(tx, { type: "run", runId, hostId: null });
      });
    })();
    const got2 = await readEvents(stream2, () => false);
    await finisher;
    expect(got2.ended).toBe(true);
    const chunkEvents = chunksOf(got2.events) as typeof got2.events;
    const all = [...chunks1, ...chunkEvents].map((e) => e.id);
    expect(all).toEqual(Array.from({ length: 9 }, (_, i) => i + 1));
    const end = got2.events.at(-1)!;
    expect(end).toMatchObject({ event: "end", data: { status: "failed", lastSeq: 9 } });
    const lastChunk = chunkEvents.at(-1)!.data as LogChunk;
    expect(lastChunk.lines).toEqual(["■ run aborted by operator during S"]);
    // Lines arrive numbered run-wide and contiguous.
    const numbers = [...chunks1, ...chunkEvents].flatMap((e) => {
      const chunk = e.data as LogChunk;
      return chunk.lines.map((_, i) => chunk.firstLine + i);
    });
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));
  });

  it("a finished run's stream sends what there is and ends at once", async () => {
    const runId = await newRun();
    await appendRunLog(testDatabase.db, runId, lines("done", 2));
    await testDatabase.db.update(runs).set({ status: "succeeded" }).where(eq(runs.id, runId));
    const stream = createRunLogStream({
      db: testDatabase.db,
      listener,
      runId,
      afterSeq: 0,
      signal: new AbortController().signal,
    });
    const got = await readEvents(stream, () => false);
    expect(got.ended).toBe(true);
    expect(got.events.map((e) => e.event)).toEqual(["chunk", "end"]); // never "live"
  });
});
