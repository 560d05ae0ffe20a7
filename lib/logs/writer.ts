import { appendRunLog, type LogExecutor } from "./append";
import type { ChunkLimits, LogLineKind } from "./chunks";
import { safeErrorSummary } from "@/lib/errors";

/** How long a line waits in memory before it is committed (and reaches the browser). */
export const FLUSH_INTERVAL_MS = 200;
/** Lines held while the database does not answer; beyond, the oldest are dropped (and counted). */
const MAX_BUFFERED_LINES = 50_000;

/**
 * The log of one tick, written while the visit runs. Lines are buffered for at most
 * FLUSH_INTERVAL_MS and committed in their own small transactions — not in the tick's — for
 * two reasons: an operator sees an `apt-get install` progress as it happens rather than when
 * the visit ends, and a command that ran on the host stays in the log even when the tick's
 * transaction rolls back (the host did run it).
 */
export type RunLogWriter = {
  line(step: string, kind: LogLineKind, text: string): void;
  /** Masks this literal value in every line written from now on. */
  maskSecret(value: string): void;
  /** Resolves once every line given so far is committed. */
  flush(): Promise<void>;
  /** Final flush; later lines are ignored. Never throws (a lost log line must not fail a tick). */
  close(): Promise<void>;
};

export function createRunLogWriter(
  db: LogExecutor,
  runId: string,
  options: {
    flushIntervalMs?: number;
    limits?: Partial<ChunkLimits>;
    onError?: (error: unknown) => void;
  } = {},
): RunLogWriter {
  const intervalMs = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
  const onError =
    options.onError ??
    ((error: unknown) =>
      console.error(`run ${runId}: writing log lines failed: ${safeErrorSummary(error)}`));
  const secrets: string[] = [];
  let buffer: { step: string; kind: LogLineKind; text: string; at: Date }[] = [];
  let dropped = 0;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> = Promise.resolve();
  let closed = false;

  const writeOnce = async () => {
    if (buffer.length === 0 && dropped === 0) return;
    const batch = buffer;
    buffer = [];
    if (dropped > 0) {
      const first = batch[0];
      batch.unshift({
        step: first?.step ?? "",
        kind: "marker",
        text: `──── ${dropped} log lines were lost while the database did not answer ────`,
        at: first?.at ?? new Date(),
      });
      dropped = 0;
    }
    try {
      await appendRunLog(db, runId, batch, { secrets, limits: options.limits });
    } catch (error) {
      onError(error);
      buffer = batch.concat(buffer); // try again with the next flush
      if (buffer.length > MAX_BUFFERED_LINES) {
        dropped += buffer.length - MAX_BUFFERED_LINES;
        buffer = buffer.slice(buffer.length - MAX_BUFFERED_LINES);
      }
    }
  };

  const flush = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    inFlight = inFlight.then(writeOnce);
    return inFlight;
  };

  return {
    line(step, kind, text) {
      if (closed) return;
      buffer.push({ step, kind, text, at: new Date() });
      timer ??= setTimeout(() => void flush(), intervalMs);
    },
    maskSecret(value) {
      if (value.length >= 4 && !secrets.includes(value)) secrets.push(value);
    },
    flush,
    async close() {
      if (closed) return inFlight;
      closed = true;
      await flush();
      if (buffer.length > 0) await flush(); // one retry for a batch that failed just now
      buffer = [];
    },
  };
}
