import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import type { LiveEvent, LiveListener } from "@/lib/live/listener";
import { readChunksAfter } from "./read";
import { safeErrorSummary } from "@/lib/errors";
import { createEventStream } from "@/lib/live/event-stream";
import { serialRerun } from "@/lib/live/serial-rerun";
import type { WatchAccess } from "@/lib/live/event-stream";

const HEARTBEAT_MS = 15_000;
const PAGE_CHUNKS = 200;
const FALLBACK_POLL_MS = 2_000;

/** Parses `Last-Event-ID` / `?after=`: a chunk sequence number, or 0 (from the start). */
export function parseResumeSeq(value: string | null | undefined): number | null {
  if (value === null || value === undefined || value === "") return 0;
  if (!/^\d{1,9}$/.test(value)) return null;
  return Number(value);
}

/**
 * The SSE stream of one run's log for one viewer:
 * - `event: chunk`, `id: <seq>`, `data: {seq, step, kind, at, firstLine, lines}` for every chunk
 *   after `afterSeq`, in order — the backlog first, then new chunks as they commit. The browser's
 *   EventSource sends the last id back as `Last-Event-ID` when it reconnects, so a resumed
 *   stream continues at the next chunk: no duplicates, and (chunks commit in seq order) no gaps.
 * - `event: live` once the backlog is sent (the viewer stops showing "loading").
 * - `event: end`, `data: {status, lastSeq}` once the run is no longer running and every chunk
 *   has been sent; then the stream closes. A finished run streams nothing forever.
 * - `event: signed-out` when `watchAccess` says the viewer's access ended; then it closes.
 *
 * New chunks are noticed through the shared LISTEN connection (`{type:"log", runId, seq}`), so
 * a hundred viewers are one database connection plus one small query per chunk batch each;
 * nothing runs on the host for them.
 */
export function createRunLogStream(options: {
  db: Database;
  listener: LiveListener;
  runId: string;
  afterSeq: number;
  signal: AbortSignal;
  /** Ends the stream with `event: signed-out` once the viewer may no longer read it. */
  watchAccess?: WatchAccess;
  heartbeatMs?: number;
}): ReadableStream<Uint8Array> {
  const { db, listener, runId } = options;
  return createEventStream({
    signal: options.signal,
    heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
    watchAccess: options.watchAccess,
    open(sink) {
      let lastSent = options.afterSeq;
      let caughtUp = false;

      // One pass: what committed after `lastSent`, then the end if the run stopped.
      const pump = serialRerun(
        async () => {
          try {
            // Status first: the run's end and its last log line commit together, so a run seen
            // as finished has all its chunks visible to the read that follows.
            const [run] = await db
              .select({ status: runs.status })
              .from(runs)
              .where(eq(runs.id, runId));
            let page;
            do {
              page = await readChunksAfter(db, runId, lastSent, PAGE_CHUNKS);
              for (const chunk of page) {
                sink.send(`id: ${chunk.seq}\nevent: chunk\ndata: ${JSON.stringify(chunk)}\n\n`);
                lastSent = chunk.seq;
              }
            } while (page.length === PAGE_CHUNKS && !sink.closed);
            if (!caughtUp && run?.status === "running") {
              caughtUp = true;
              sink.send(`event: live\ndata: ${JSON.stringify({ lastSeq: lastSent })}\n\n`);
            }
            if (!run || run.status !== "running") {
              sink.send(
                `event: end\ndata: ${JSON.stringify({ status: run?.status ?? "deleted", lastSeq: lastSent })}\n\n`,
              );
              sink.close();
            }
          } catch (error) {
            // The database hiccuped: close; the browser reconnects and resumes from its last id.
            console.error(`log stream for run ${runId} failed: ${safeErrorSummary(error)}`);
            sink.close();
          }
        },
        () => sink.closed,
      );

      sink.send(`retry: 2000\n: log stream of run ${runId}\n\n`);
      const unsubscribe = listener.subscribe((event: LiveEvent) => {
        if (event.kind === "status") {
          if (event.connected) void pump(); // notifications may have been missed meanwhile
          return;
        }
        const message = event.message;
        if (message.type === "log" && message.runId === runId && message.seq > lastSent)
          void pump();
        else if (message.type === "run" && message.runId === runId) void pump();
      });
      // While the shared LISTEN connection is down, notifications are lost: poll instead.
      const fallback = setInterval(() => {
        if (!listener.connected) void pump();
      }, FALLBACK_POLL_MS);
      void pump();
      return () => {
        clearInterval(fallback);
        unsubscribe();
      };
    },
  });
}
