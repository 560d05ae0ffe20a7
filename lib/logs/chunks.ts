import { LOG_LINE_KINDS } from "@/lib/log-line-kinds";
import { formatBytes } from "./format-bytes";

// The kinds live below every layer (the database's enum is made of them too: no cycle).
export { LOG_LINE_KINDS };
export type LogLineKind = (typeof LOG_LINE_KINDS)[number];

/** A chunk as the browser receives it (one SSE event of lib/logs/stream.ts). */
export type LogChunk = {
  seq: number;
  step: string;
  kind: LogLineKind;
  /** ISO time the chunk's lines were written. */
  at: string;
  firstLine: number;
  /** The lines, without their `\n`. */
  lines: string[];
};

/** One line to append, already normalized (no `\n`, folded, masked, capped). */
export type LogEntry = { step: string; kind: LogLineKind; text: string; at: Date };

/** The counters of one run's log (the `run_log_heads` row). */
export type LogHead = {
  lastSeq: number;
  lines: number;
  bytes: number;
  outputBytes: number;
  truncated: boolean;
  droppedLines: number;
};

export type PlannedChunk = {
  seq: number;
  step: string;
  kind: LogLineKind;
  at: Date;
  firstLine: number;
  lineCount: number;
  firstByte: number;
  bytes: number;
  text: string;
};

export type ChunkLimits = {
  /** Output, file and note bytes a run may store; beyond, those lines are dropped. */
  capBytes: number;
  maxChunkLines: number;
  maxChunkBytes: number;
};

/** 16 MiB of output per run: hours of apt and virt-customize chatter, far below a browser's limits. */
export const DEFAULT_RUN_LOG_CAP_BYTES = 16 * 1024 * 1024;

export const DEFAULT_CHUNK_LIMITS: ChunkLimits = {
  capBytes: DEFAULT_RUN_LOG_CAP_BYTES,
  maxChunkLines: 1000,
  maxChunkBytes: 64 * 1024,
};

export const EMPTY_HEAD: LogHead = {
  lastSeq: 0,
  lines: 0,
  bytes: 0,
  outputBytes: 0,
  truncated: false,
  droppedLines: 0,
};

/** Lines that count against the cap. Commands, results, markers and the run's end never do:
 * a truncated log still shows which commands ran, how they ended, and how the run ended. */
export function isCapped(kind: LogLineKind): boolean {
  return kind === "output" || kind === "file" || kind === "note";
}

export function truncationMarker(capBytes: number): string {
  return `──── log cap of ${formatBytes(capBytes)} reached: further command output is not stored (commands, exit codes and the run's end still are) ────`;
}

/**
 * Groups entries into chunks after `head`: consecutive lines of the same step and kind, up to
 * the chunk limits; applies the per-run cap (one marker line when it is reached, then capped
 * lines are counted as dropped). Pure: the caller writes the chunks and the new head together.
 */
export function planChunks(
  head: LogHead,
  entries: readonly LogEntry[],
  limits: ChunkLimits = DEFAULT_CHUNK_LIMITS,
): { chunks: PlannedChunk[]; head: LogHead } {
  const next: LogHead = { ...head };
  const chunks: PlannedChunk[] = [];
  let open: { chunk: PlannedChunk; lines: string[] } | null = null;

  const close = () => {
    if (!open) return;
    open.chunk.text = open.lines.join("\n") + "\n";
    chunks.push(open.chunk);
    open = null;
  };

  const add = (entry: LogEntry) => {
    const size = Buffer.byteLength(entry.text) + 1;
    if (
      !open ||
      open.chunk.step !== entry.step ||
      open.chunk.kind !== entry.kind ||
      open.chunk.lineCount >= limits.maxChunkLines ||
      (open.chunk.bytes + size > limits.maxChunkBytes && open.chunk.lineCount > 0)
    ) {
      close();
      next.lastSeq += 1;
      open = {
        chunk: {
          seq: next.lastSeq,
          step: entry.step,
          kind: entry.kind,
          at: entry.at,
          firstLine: next.lines + 1,
          lineCount: 0,
          firstByte: next.bytes,
          bytes: 0,
          text: "",
        },
        lines: [],
      };
    }
    open.lines.push(entry.text);
    open.chunk.lineCount += 1;
    open.chunk.bytes += size;
    next.lines += 1;
    next.bytes += size;
    if (isCapped(entry.kind)) next.outputBytes += size;
  };

  for (const entry of entries) {
    if (isCapped(entry.kind)) {
      if (next.truncated) {
        next.droppedLines += 1;
        continue;
      }
      const size = Buffer.byteLength(entry.text) + 1;
      if (next.outputBytes + size > limits.capBytes) {
        next.truncated = true;
        next.droppedLines += 1;
        add({
          step: entry.step,
          kind: "marker",
          text: truncationMarker(limits.capBytes),
          at: entry.at,
        });
        continue;
      }
    }
    add(entry);
  }
  close();
  return { chunks, head: next };
}
