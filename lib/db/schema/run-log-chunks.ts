import {
  bigint,
  boolean,
  index,
  integer,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { LOG_LINE_KINDS } from "@/lib/log-line-kinds";
import { runs } from "./runs";

/** What a line of the run log is (lib/log-line-kinds.ts, `LOG_LINE_KINDS`). */
export const logLineKind = pgEnum("log_line_kind", LOG_LINE_KINDS);

/**
 * The run log, in chunks: consecutive lines of one step and one kind, written together.
 * `seq` numbers a run's chunks 1, 2, 3, … without gaps (allocated under the head row's lock,
 * so chunks also commit in `seq` order); it is the SSE event id a browser resumes from.
 * `text` holds the lines, each ended by `\n`: the raw log is the chunks' texts in `seq` order.
 */
export const runLogChunks = pgTable(
  "run_log_chunks",
  {
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    step: text("step").notNull(),
    kind: logLineKind("kind").notNull(),
    at: timestamp("at", { withTimezone: true }).notNull(),
    /** Line number (1-based, run-wide) of the chunk's first line. */
    firstLine: integer("first_line").notNull(),
    lineCount: integer("line_count").notNull(),
    /** Byte offset of the chunk in the raw log (for `Range` requests). */
    firstByte: bigint("first_byte", { mode: "number" }).notNull(),
    bytes: integer("bytes").notNull(),
    text: text("text").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.seq] }),
    index("run_log_chunks_line_idx").on(t.runId, t.firstLine),
  ],
);

/** One row per run with a log: the counters appends allocate from, under this row's lock. */
export const runLogHeads = pgTable("run_log_heads", {
  runId: uuid("run_id")
    .primaryKey()
    .references(() => runs.id, { onDelete: "cascade" }),
  lastSeq: integer("last_seq").notNull().default(0),
  lines: integer("lines").notNull().default(0),
  bytes: bigint("bytes", { mode: "number" }).notNull().default(0),
  /** Output (and tailed file) bytes stored so far: what the per-run cap counts. */
  outputBytes: bigint("output_bytes", { mode: "number" }).notNull().default(0),
  /** The cap was reached: output lines are dropped from here on (commands and results are not). */
  truncated: boolean("truncated").notNull().default(false),
  droppedLines: integer("dropped_lines").notNull().default(0),
});

/**
 * Where the tail of a host file stands, written in the same transaction as the lines it
 * produced: a worker that dies between reading and committing re-reads the same bytes, and one
 * that committed never reads them again.
 */
export const runLogSources = pgTable(
  "run_log_sources",
  {
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    /** The file's path on the host. */
    path: text("path").notNull(),
    /** Bytes of the file consumed (everything before this offset is in the log or pending). */
    offset: bigint("offset", { mode: "number" }).notNull().default(0),
    /** Inode of the file read; another inode means the file was recreated. */
    inode: text("inode"),
    /** The unterminated last line, already `\r`-folded as far as it can be. */
    pending: text("pending").notNull().default(""),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.path] })],
);
