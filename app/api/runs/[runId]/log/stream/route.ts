import { z } from "zod";
import { route } from "@/lib/api/route";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { runLogEventStream } from "@/lib/api/run-log-responses";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** The resume point for a first connection; EventSource's reconnects send `Last-Event-ID`. */
const ZStreamQuery = z.object({ after: z.string().optional() });

/**
 * The run's log as Server-Sent Events (see lib/logs/stream.ts): the backlog after the resume
 * point, then chunks as they are written, then `end` when the run stops (or `signed-out` when
 * the viewer's access ends). Resume point: the `Last-Event-ID` header (EventSource's own
 * reconnects) or else `?after=<seq>`.
 */
export const GET = route(
  "GET /api/runs/[runId]/log/stream",
  {
    role: "viewer",
    summary: "A run's log as Server-Sent Events, live until the run stops",
    params: { runId: ZRunId },
    query: { schema: ZStreamQuery },
  },
  async ({ request, actor, params: { runId }, query }) =>
    runLogEventStream(getDb(), runId, {
      resume: request.headers.get("last-event-id") ?? query.after,
      request,
      actor,
    }),
);
