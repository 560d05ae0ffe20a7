import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { readSelfTestOverview } from "@/lib/power/self-test/latest-self-test";
import { requestSelfTest, ZRequestSelfTest } from "@/lib/power/self-test/request-self-test";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * The last self-test of the shutdown path: `{ latest: { verdict, finishedAt, occasion, checks:
 * [{ key, title, subject, verdict, reason, next }] } | null, skippedSince: { at, reason } | null,
 * lastWebhookTest: { finishedAt, requestedBy, checks } | null }` — the webhook checks of the last
 * run by hand (only it sends test messages) while the latest run is another one.
 * Verdicts: ok, warning, failed, could-not-check.
 */
export const GET = route(
  "GET /api/power/self-test",
  { role: "viewer", summary: "The last self-test of the shutdown path" },
  async () => json(await readSelfTestOverview(getDb())),
);

/**
 * Runs the self-test now (operators and admins): 202 `{ queued: true, message }`; the worker
 * runs it and `GET` shows the result. 409 during a power outage. The body is empty or `{}`.
 */
export const POST = route(
  "POST /api/power/self-test",
  {
    role: "operator",
    summary: "Run the self-test now",
    body: { schema: ZRequestSelfTest, read: "json", optional: true },
  },
  async ({ actor }) => json({ queued: true, message: await requestSelfTest(getDb(), actor) }, 202),
);
