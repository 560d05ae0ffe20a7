import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { json, readJson, respondError } from "@/lib/api/respond";
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
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json(await readSelfTestOverview(getDb()));
  } catch (error) {
    return respondError(error, "GET /api/power/self-test");
  }
}

/**
 * Runs the self-test now (operators and admins): 202 `{ queued: true, message }`; the worker
 * runs it and `GET` shows the result. 409 during a power outage. The body is empty or `{}`.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const body = request.headers.get("content-length") === "0" ? {} : await readBody(request);
    parseInput(ZRequestSelfTest, body);
    return json({ queued: true, message: await requestSelfTest(getDb(), actor) }, 202);
  } catch (error) {
    return respondError(error, "POST /api/power/self-test");
  }
}

async function readBody(request: Request): Promise<unknown> {
  const text = await request.clone().text();
  return text.trim() === "" ? {} : readJson(request);
}
