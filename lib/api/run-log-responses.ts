import { eq } from "drizzle-orm";
import type { Actor } from "@/lib/auth/actor";
import { watchRequestAccess } from "@/lib/auth/stream-access";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { EVENT_STREAM_HEADERS } from "@/lib/live/event-stream";
import { getLiveListener } from "@/lib/live/listener";
import { decideRange } from "@/lib/logs/range";
import { readLogHead, readRawBytes } from "@/lib/logs/read";
import { createRunLogStream, parseResumeSeq } from "@/lib/logs/stream";

async function requireRun(db: Database, runId: string): Promise<void> {
  const [run] = await db.select({ id: runs.id }).from(runs).where(eq(runs.id, runId));
  if (!run) throw new AppError("not_found", `Run ${runId} does not exist.`);
}

/**
 * The run's whole log as plain text. `range` (a `Range: bytes=…` header) is honoured: 206 with
 * `Content-Range`, so `curl -r -4096` tails it and an interrupted download resumes; `download`
 * asks the browser to save it as a file. `X-Content-Type-Options: nosniff`: a log line with
 * `<script>` must never be sniffed as HTML.
 */
export async function runLogDownload(
  db: Database,
  runId: string,
  options: { range: string | null; download: boolean },
): Promise<Response> {
  await requireRun(db, runId);
  const head = await readLogHead(db, runId);
  const total = head.bytes;
  const headers = new Headers({
    "Content-Type": "text/plain; charset=utf-8",
    "Accept-Ranges": "bytes",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Log-Lines": String(head.lines),
    "X-Log-Truncated": String(head.truncated),
  });
  if (options.download) {
    headers.set("Content-Disposition", `attachment; filename="run-${runId}.log"`);
  }
  const range = decideRange(options.range, total);
  if (range.kind === "unsatisfiable") {
    headers.set("Content-Range", `bytes */${total}`);
    return new Response(null, { status: 416, headers });
  }
  const [start, end] = range.kind === "partial" ? [range.start, range.end] : [0, total - 1];
  headers.set("Content-Length", String(Math.max(0, end - start + 1)));
  if (range.kind === "partial") headers.set("Content-Range", `bytes ${start}-${end}/${total}`);
  const source = readRawBytes(db, runId, start, end);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await source.next();
        if (next.done) controller.close();
        else controller.enqueue(new Uint8Array(next.value));
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      await source.return(undefined);
    },
  });
  return new Response(body, { status: range.kind === "partial" ? 206 : 200, headers });
}

/**
 * The run's log as Server-Sent Events for the viewer `actor` (see ./stream.ts), from the resume
 * point `resume` (a chunk sequence number; none: from the start) until the run stops or the
 * viewer's access ends.
 */
export async function runLogEventStream(
  db: Database,
  runId: string,
  options: { resume: string | null | undefined; request: Request; actor: Actor },
): Promise<Response> {
  const afterSeq = parseResumeSeq(options.resume);
  if (afterSeq === null) {
    throw new AppError("invalid_input", "The resume point must be a chunk sequence number.", {
      after: ["Not a sequence number."],
    });
  }
  await requireRun(db, runId);
  const listener = getLiveListener();
  const stream = createRunLogStream({
    db,
    listener,
    runId,
    afterSeq,
    signal: options.request.signal,
    watchAccess: watchRequestAccess(options.request, options.actor, "viewer", listener),
  });
  return new Response(stream, { headers: EVENT_STREAM_HEADERS });
}
