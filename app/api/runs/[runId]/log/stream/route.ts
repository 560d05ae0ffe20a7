import { eq } from "drizzle-orm";
import { requestActor } from "@/lib/auth/actor";
import { EVENT_STREAM_HEADERS } from "@/lib/live/event-stream";
import { parseId, respondError } from "@/lib/api/respond";
import { watchRequestAccess } from "@/lib/auth/stream-access";
import { getDb } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { ZRunId } from "@/lib/hosts/schemas";
import { getLiveListener } from "@/lib/live/listener";
import { createRunLogStream, parseResumeSeq } from "@/lib/logs/stream";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The run's log as Server-Sent Events (see lib/logs/stream.ts): the backlog after the resume
 * point, then chunks as they are written, then `end` when the run stops (or `signed-out` when
 * the viewer's access ends). Resume point: the
 * `Last-Event-ID` header (EventSource's own reconnects) or else `?after=<seq>`.
 */
export async function GET(
  request: Request,
  { params }: { params: Promise<{ runId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "viewer");
    const runId = parseId(ZRunId, (await params).runId, "runId");
    const resume =
      request.headers.get("last-event-id") ?? new URL(request.url).searchParams.get("after");
    const afterSeq = parseResumeSeq(resume);
    if (afterSeq === null) {
      throw new AppError("invalid_input", "The resume point must be a chunk sequence number.", {
        after: ["Not a sequence number."],
      });
    }
    const db = getDb();
    const [run] = await db.select({ id: runs.id }).from(runs).where(eq(runs.id, runId));
    if (!run) throw new AppError("not_found", `Run ${runId} does not exist.`);
    const listener = getLiveListener();
    const stream = createRunLogStream({
      db,
      listener,
      runId,
      afterSeq,
      signal: request.signal,
      watchAccess: watchRequestAccess(request, actor, "viewer", listener),
    });
    return new Response(stream, { headers: EVENT_STREAM_HEADERS });
  } catch (error) {
    return respondError(error, "GET /api/runs/[runId]/log/stream");
  }
}
