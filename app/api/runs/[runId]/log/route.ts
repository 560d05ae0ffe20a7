import { eq } from "drizzle-orm";
import { requestActor } from "@/lib/auth/actor";
import { parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { ZRunId } from "@/lib/hosts/schemas";
import { decideRange } from "@/lib/logs/range";
import { readLogHead, readRawBytes } from "@/lib/logs/read";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The run's whole log as plain text, for automation and the viewer's download button.
 * `Range: bytes=…` is honoured (206 with `Content-Range`), so `curl -r -4096` tails it and an
 * interrupted download resumes; `?download=1` asks the browser to save it as a file.
 * `X-Content-Type-Options: nosniff`: a log line with `<script>` must never be sniffed as HTML.
 */
export async function GET(
  request: Request,
  { params }: { params: Promise<{ runId: string }> },
): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const runId = parseId(ZRunId, (await params).runId, "runId");
    const db = getDb();
    const [run] = await db.select({ id: runs.id }).from(runs).where(eq(runs.id, runId));
    if (!run) throw new AppError("not_found", `Run ${runId} does not exist.`);
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
    if (new URL(request.url).searchParams.get("download") === "1") {
      headers.set("Content-Disposition", `attachment; filename="run-${runId}.log"`);
    }
    const range = decideRange(request.headers.get("range"), total);
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
  } catch (error) {
    return respondError(error, "GET /api/runs/[runId]/log");
  }
}
