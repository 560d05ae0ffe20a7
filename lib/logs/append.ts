import { and, eq, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runLogChunks, runLogHeads, runLogSources } from "@/lib/db/schema";
import { liveNotifyQuery } from "@/lib/live/notify";
import { DEFAULT_CHUNK_LIMITS, planChunks, type ChunkLimits, type LogEntry } from "./chunks";
import { normalizeLine } from "./text";

/** A database or an open transaction: appends nest (savepoint) inside the caller's transaction. */
export type LogExecutor = Pick<Database, "transaction">;

/** The tail position of a host file, written together with the lines it produced. */
export type SourcePosition = {
  path: string;
  offset: number;
  inode: string | null;
  pending: string;
};

export type AppendOptions = {
  /** Literal secret values to mask wherever they appear (e.g. the host's SSH password). */
  secrets?: readonly string[];
  limits?: Partial<ChunkLimits>;
  /** Saved in the same transaction as the lines (see `run_log_sources`). */
  source?: SourcePosition;
};

export type AppendResult = { lastSeq: number; lines: number; truncated: boolean };

/**
 * THE way lines enter a run log (engine, command output, tailed files, tests, benchmarks):
 * normalizes every line (`\r` folding, masking, length cap), allocates chunk sequence numbers
 * under the run's head row lock, inserts the chunks, and NOTIFYs `{type:"log", runId, seq}` —
 * delivered when the transaction commits. Because the head row stays locked until commit,
 * chunks of one run commit in `seq` order: a reader that saw chunk n never later finds a chunk
 * below n appearing (no gaps for a resuming browser).
 */
export async function appendRunLog(
  db: LogExecutor,
  runId: string,
  entries: readonly LogEntry[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  const secrets = options.secrets ?? [];
  const normalized = entries.map((entry) => ({
    ...entry,
    text: normalizeLine(entry.text, secrets),
  }));
  const limits = { ...DEFAULT_CHUNK_LIMITS, ...options.limits };
  return db.transaction(async (tx) => {
    // One statement creates the head or takes the existing one's row lock, and returns it: the
    // lock holds until commit, so the sequence numbers planned from it are this append's alone.
    const [head] = await tx
      .insert(runLogHeads)
      .values({ runId })
      .onConflictDoUpdate({ target: runLogHeads.runId, set: { runId: sql`excluded.run_id` } })
      .returning();
    if (!head) throw new Error(`the run log head of run ${runId} was neither created nor found`);
    const planned = planChunks(head, normalized, limits);
    const writes: SQLWrapper[] = [];
    if (planned.chunks.length > 0) {
      writes.push(
        tx.insert(runLogChunks).values(planned.chunks.map((chunk) => ({ runId, ...chunk }))),
      );
    }
    if (planned.head !== head) {
      const { lastSeq, lines, bytes, outputBytes, truncated, droppedLines } = planned.head;
      writes.push(
        tx
          .update(runLogHeads)
          .set({ lastSeq, lines, bytes, outputBytes, truncated, droppedLines })
          .where(eq(runLogHeads.runId, runId)),
      );
    }
    if (options.source) {
      const { path, offset, inode, pending } = options.source;
      writes.push(
        tx
          .insert(runLogSources)
          .values({ runId, path, offset, inode, pending })
          .onConflictDoUpdate({
            target: [runLogSources.runId, runLogSources.path],
            set: { offset, inode, pending, updatedAt: sql`now()` },
          }),
      );
    }
    const notify =
      planned.chunks.length > 0
        ? liveNotifyQuery({ type: "log", runId, seq: planned.head.lastSeq })
        : null;
    const statement = oneStatement(writes, notify);
    if (statement) await tx.execute(statement);
    return {
      lastSeq: planned.head.lastSeq,
      lines: planned.head.lines,
      truncated: planned.head.truncated,
    };
  });
}

/**
 * The writes (and the NOTIFY) as one statement, one round trip: data-modifying WITH parts
 * all run, and on tables of their own here none needs to see another's rows.
 */
function oneStatement(writes: readonly SQLWrapper[], notify: SQL | null): SQL | null {
  if (writes.length === 0) return notify;
  if (writes.length === 1 && notify === null) return writes[0]!.getSQL();
  const parts = writes.map((write, i) => sql`${sql.raw(`w${i}`)} as (${write.getSQL()})`);
  return sql`with ${sql.join(parts, sql`, `)} ${notify ?? sql`select 1`}`;
}

/** Where the tail of `path` stands for this run (offset 0 when it was never read). */
export async function readSourcePosition(
  db: Pick<Database, "select">,
  runId: string,
  path: string,
): Promise<SourcePosition> {
  const [row] = await db
    .select()
    .from(runLogSources)
    .where(and(eq(runLogSources.runId, runId), eq(runLogSources.path, path)));
  return row
    ? { path, offset: row.offset, inode: row.inode, pending: row.pending }
    : { path, offset: 0, inode: null, pending: "" };
}
