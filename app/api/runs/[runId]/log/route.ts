import { z } from "zod";
import { route } from "@/lib/api/route";
import { getDb } from "@/lib/db/client";
import { ZRunId } from "@/lib/hosts/schemas";
import { runLogDownload } from "@/lib/api/run-log-responses";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** `?download=1` asks the browser to save the log as a file; any other value shows it. */
const ZLogQuery = z.object({ download: z.string().optional() });

/**
 * The run's whole log as plain text, for automation and the viewer's download button.
 * `Range: bytes=…` is honoured (206 with `Content-Range`), so `curl -r -4096` tails it and an
 * interrupted download resumes; `?download=1` asks the browser to save it as a file.
 */
export const GET = route(
  "GET /api/runs/[runId]/log",
  {
    role: "viewer",
    summary: "A run's whole log as plain text (Range requests honoured)",
    params: { runId: ZRunId },
    query: { schema: ZLogQuery },
  },
  async ({ request, params: { runId }, query }) =>
    runLogDownload(getDb(), runId, {
      range: request.headers.get("range"),
      download: query.download === "1",
    }),
);
