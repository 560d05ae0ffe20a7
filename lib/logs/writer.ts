import { appendRunLog, type LogExecutor } from "./append";
import type { ChunkLimits, LogEntry, LogLineKind } from "./chunks";
import { isDatabaseUnreachable } from "@/lib/db/unreachable";
import { safeErrorSummary } from "@/lib/errors";

/** How long a line waits in memory before it is committed (and reaches the browser). */
export const FLUSH_INTERVAL_MS = 200;

/**
 * What a writer holds while the database does not answer (a restart, an outage): up to `lines`
 * lines or `bytes` bytes (beyond, the oldest are dropped and counted), retried every
 * `retryMs`…`maxRetryMs`; at close it keeps trying for `closeWaitMs` before it gives up on them.
 */
export type HoldLimits = {
  lines: number;
  bytes: number;
  retryMs: number;
  maxRetryMs: number;
  closeWaitMs: number;
};

export const DEFAULT_HOLD_LIMITS: HoldLimits = {
  lines: 20_000,
  bytes: 8 * 1024 * 1024,
  retryMs: 250,
  maxRetryMs: 5_000,
  closeWaitMs: 30_000,
};

/**
 * Lines a closed writer had to give up, per run, for this process's next writer of the run to
 * report at the top of its first write (the database was away when they should have been).
 */
const lostByRun = new Map<string, number>();

export function lostLinesMarker(count: number): string {
  return `──── ${count} log line${count === 1 ? " was" : "s were"} lost while the database was unreachable ────`;
}

/**
 * The log of one tick, written while the visit runs. Lines are buffered for at most
 * FLUSH_INTERVAL_MS and committed in their own small transactions — not in the tick's — for
 * two reasons: an operator sees an `apt-get install` progress as it happens rather than when
 * the visit ends, and a command that ran on the host stays in the log even when the tick's
 * transaction rolls back (the host did run it). While the database is away the lines wait in
 * memory, within HoldLimits, and go in when it is back; what could not wait is counted and the
 * count written as a marker line instead: nothing committed is ever lost, and a gap is never silent.
 */
export type RunLogWriter = {
  line(step: string, kind: LogLineKind, text: string): void;
  /** Masks this literal value in every line written from now on. */
  maskSecret(value: string): void;
  /** Resolves once every line given so far is committed, or the attempt failed (kept for later). */
  flush(): Promise<void>;
  /** Final flush, retried within HoldLimits; later lines are ignored. Never throws (a lost log line must not fail a tick). */
  close(): Promise<void>;
};

export function createRunLogWriter(
  db: LogExecutor,
  runId: string,
  options: {
    flushIntervalMs?: number;
    limits?: Partial<ChunkLimits>;
    hold?: Partial<HoldLimits>;
    /** The first failed write of each streak (later ones fail the same way). */
    onError?: (error: unknown) => void;
    /** Lines given up at close because the database stayed away (also in the run's log later). */
    onLost?: (count: number) => void;
  } = {},
): RunLogWriter {
  const intervalMs = options.flushIntervalMs ?? FLUSH_INTERVAL_MS;
  const hold = { ...DEFAULT_HOLD_LIMITS, ...options.hold };
  const onError =
    options.onError ??
    ((error: unknown) =>
      console.error(
        `run ${runId}: writing log lines failed (${safeErrorSummary(error)}); holding them and retrying`,
      ));
  const onLost =
    options.onLost ??
    ((count: number) =>
      console.error(`run ${runId}: ${count} log lines lost while the database was unreachable`));
  const secrets: string[] = [];
  let buffer: LogEntry[] = [];
  let bufferedBytes = 0;
  let lost = lostByRun.get(runId) ?? 0;
  lostByRun.delete(runId);
  let failures = 0;
  let lastError: unknown = null;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> = Promise.resolve();
  let closed = false;

  const keepWithinLimits = () => {
    let drop = 0;
    while (
      drop < buffer.length &&
      (buffer.length - drop > hold.lines || bufferedBytes > hold.bytes)
    ) {
      bufferedBytes -= Buffer.byteLength(buffer[drop]!.text);
      drop += 1;
    }
    if (drop === 0) return;
    buffer = buffer.slice(drop);
    lost += drop;
  };

  const schedule = (delayMs: number) => {
    timer ??= setTimeout(() => void flush(), delayMs);
  };

  const writeOnce = async () => {
    if (buffer.length === 0 && lost === 0) return;
    const batch = buffer;
    const batchBytes = bufferedBytes;
    const batchLost = lost;
    buffer = [];
    bufferedBytes = 0;
    lost = 0;
    const entries =
      batchLost > 0
        ? [
            {
              step: batch[0]?.step ?? "",
              kind: "marker" as const,
              text: lostLinesMarker(batchLost),
              at: batch[0]?.at ?? new Date(),
            },
            ...batch,
          ]
        : batch;
    try {
      await appendRunLog(db, runId, entries, { secrets, limits: options.limits });
      failures = 0;
    } catch (error) {
      if (failures === 0) onError(error);
      failures += 1;
      lastError = error;
      // Back in front of whatever came meanwhile, in the order they were written.
      buffer = batch.concat(buffer);
      bufferedBytes += batchBytes;
      lost += batchLost;
      keepWithinLimits();
      // Lines wait for the database even when no new line comes to trigger a flush.
      if (!closed) schedule(retryDelay());
    }
  };

  const retryDelay = () =>
    Math.min(hold.maxRetryMs, hold.retryMs * 2 ** Math.min(Math.max(failures - 1, 0), 10));

  const flush = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    inFlight = inFlight.then(writeOnce);
    return inFlight;
  };

  const pending = () => buffer.length > 0 || lost > 0;

  return {
    line(step, kind, text) {
      if (closed) return;
      buffer.push({ step, kind, text, at: new Date() });
      bufferedBytes += Buffer.byteLength(text);
      keepWithinLimits();
      schedule(intervalMs); // a retry already waiting keeps its later time
    },
    maskSecret(value) {
      if (value.length >= 4 && !secrets.includes(value)) secrets.push(value);
    },
    flush,
    async close() {
      if (closed) return inFlight;
      closed = true;
      const giveUpAt = Date.now() + hold.closeWaitMs;
      await flush();
      // Only an unreachable database is worth waiting for; any other failure gets one retry.
      let retries = 0;
      while (
        pending() &&
        (isDatabaseUnreachable(lastError) ? Date.now() < giveUpAt : retries < 1)
      ) {
        retries += 1;
        await new Promise((resolve) => setTimeout(resolve, retryDelay()));
        await flush();
      }
      if (!pending()) return;
      const count = buffer.length + lost;
      buffer = [];
      bufferedBytes = 0;
      lost = 0;
      onLost(count);
      lostByRun.set(runId, (lostByRun.get(runId) ?? 0) + count);
    },
  };
}
