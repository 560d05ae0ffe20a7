import { and, asc, desc, eq, gt, gte, lte } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runLogChunks, runLogHeads } from "@/lib/db/schema";
import { EMPTY_HEAD, type LogChunk, type LogHead, type LogLineKind } from "./chunks";

type Reader = Pick<Database, "select">;

export async function readLogHead(db: Reader, runId: string): Promise<LogHead> {
  const [row] = await db.select().from(runLogHeads).where(eq(runLogHeads.runId, runId));
  if (!row) return EMPTY_HEAD;
  const { lastSeq, lines, bytes, outputBytes, truncated, droppedLines } = row;
  return { lastSeq, lines, bytes, outputBytes, truncated, droppedLines };
}

/** Chunks after `afterSeq`, in order, at most `limit`. */
export async function readChunksAfter(
  db: Reader,
  runId: string,
  afterSeq: number,
  limit: number,
): Promise<LogChunk[]> {
  const rows = await db
    .select()
    .from(runLogChunks)
    .where(and(eq(runLogChunks.runId, runId), gt(runLogChunks.seq, afterSeq)))
    .orderBy(asc(runLogChunks.seq))
    .limit(limit);
  return rows.map(toChunk);
}

/** The last `count` lines (or fewer), oldest first: the log tail in `RunDetail`. */
export async function readLogTail(
  db: Reader,
  runId: string,
  count: number,
): Promise<{ line: number; at: string; step: string; kind: LogLineKind; text: string }[]> {
  const head = await readLogHead(db, runId);
  if (head.lines === 0) return [];
  const fromLine = Math.max(1, head.lines - count + 1);
  // The chunk holding `fromLine` starts at or before it; chunks hold at most a few thousand lines.
  const [first] = await db
    .select({ seq: runLogChunks.seq })
    .from(runLogChunks)
    .where(and(eq(runLogChunks.runId, runId), lte(runLogChunks.firstLine, fromLine)))
    .orderBy(desc(runLogChunks.firstLine))
    .limit(1);
  const rows = await db
    .select()
    .from(runLogChunks)
    .where(and(eq(runLogChunks.runId, runId), gte(runLogChunks.seq, first?.seq ?? 1)))
    .orderBy(asc(runLogChunks.seq));
  return rows.flatMap((row) =>
    toChunk(row)
      .lines.map((text, i) => ({
        line: row.firstLine + i,
        at: row.at.toISOString(),
        step: row.step,
        kind: row.kind,
        text,
      }))
      .filter((entry) => entry.line >= fromLine),
  );
}

/**
 * The raw log's bytes `start`..`end` (inclusive), streamed chunk by chunk: a `Range` answer
 * never holds the whole log in memory.
 */
export async function* readRawBytes(
  db: Reader,
  runId: string,
  start: number,
  end: number,
  pageSize = 200,
): AsyncGenerator<Buffer> {
  if (end < start) return;
  // The chunk containing `start`: the last one beginning at or before it.
  const [first] = await db
    .select({ seq: runLogChunks.seq })
    .from(runLogChunks)
    .where(and(eq(runLogChunks.runId, runId), lte(runLogChunks.firstByte, start)))
    .orderBy(desc(runLogChunks.firstByte))
    .limit(1);
  let after = (first?.seq ?? 1) - 1;
  for (;;) {
    const rows = await db
      .select({
        seq: runLogChunks.seq,
        firstByte: runLogChunks.firstByte,
        text: runLogChunks.text,
      })
      .from(runLogChunks)
      .where(and(eq(runLogChunks.runId, runId), gt(runLogChunks.seq, after)))
      .orderBy(asc(runLogChunks.seq))
      .limit(pageSize);
    for (const row of rows) {
      if (row.firstByte > end) return;
      const bytes = Buffer.from(row.text);
      const from = Math.max(0, start - row.firstByte);
      const to = Math.min(bytes.length, end - row.firstByte + 1);
      if (to > from) yield bytes.subarray(from, to);
      after = row.seq;
    }
    if (rows.length < pageSize) return;
  }
}

function toChunk(row: typeof runLogChunks.$inferSelect): LogChunk {
  const lines = row.text.endsWith("\n") ? row.text.slice(0, -1) : row.text;
  return {
    seq: row.seq,
    step: row.step,
    kind: row.kind,
    at: row.at.toISOString(),
    firstLine: row.firstLine,
    lines: lines.split("\n"),
  };
}
