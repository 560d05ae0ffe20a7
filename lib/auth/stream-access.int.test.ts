import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as liveStream } from "@/app/api/live/route";
import { GET as logStream } from "@/app/api/runs/[runId]/log/stream/route";
import { revokeApiToken } from "@/lib/auth/api-tokens";
import { invalidateSessionToken } from "@/lib/auth/session";
import { changeUserRole, setUserDisabled } from "@/lib/auth/users";
import { getDb } from "@/lib/db/client";
import { runs, sessions } from "@/lib/db/schema";
import { createTestUser, type TestUser } from "@/test/auth";
import { sseEvents } from "@/test/sse";
import { registerProcessTestDatabase, routeParams } from "@/test/process-database";
import { getLiveListener } from "@/lib/live/listener";
import { ACCESS_RECHECK_MS, watchStreamAccess } from "./stream-access";

registerProcessTestDatabase();

afterAll(async () => {
  await getLiveListener().close();
  delete (globalThis as { __clupilotLive?: unknown }).__clupilotLive;
});

/** One open SSE response, read in the background: its events in order, and whether it ended. */
function readStream(response: Response) {
  const events: string[] = [];
  let ended = false;
  const reader = response.body!.getReader();
  const reading = (async () => {
    for await (const sse of sseEvents(reader)) if (sse.event !== null) events.push(sse.event);
    ended = true;
  })();
  return {
    events,
    get ended() {
      return ended;
    },
    /** Resolves once the stream ended by itself, or rejects after `ms`. */
    endedWithin: (ms: number) =>
      Promise.race([
        reading,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`the stream was still open after ${ms} ms`)), ms),
        ),
      ]),
    close: () => reader.cancel(),
  };
}

const until = async (condition: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** Opens /api/live as `headers` would; resolves once the server's listener is confirmed live. */
async function openLive(headers: Record<string, string>) {
  const response = await liveStream(new Request("http://127.0.0.1/api/live", { headers }));
  expect(response.status).toBe(200);
  const stream = readStream(response);
  await until(() => stream.events.includes("status"));
  // The stream's own access watch subscribes with the stream: give the LISTEN a moment.
  await until(() => getLiveListener().connected);
  return stream;
}

// Far below the 15 s periodic re-check: these ends come from the database's notification.
const PROMPT_MS = Math.min(3_000, ACCESS_RECHECK_MS / 3);

describe("an open stream ends when the access it was opened with ends", () => {
  let viewer: TestUser;
  let bystander: TestUser;
  beforeAll(async () => {
    viewer = await createTestUser(getDb(), "viewer");
    bystander = await createTestUser(getDb(), "operator");
  });

  it("signing out ends that session's live stream with signed-out; another user's sign-out does not", async () => {
    const own = await openLive(viewer.cookieHeaders());
    const others = await openLive(bystander.cookieHeaders());
    await invalidateSessionToken(getDb(), viewer.sessionToken);
    await own.endedWithin(PROMPT_MS);
    expect(own.events.at(-1)).toBe("signed-out");
    // The bystander's stream saw no access message for its user and is still open.
    expect(others.ended).toBe(false);
    expect(others.events).not.toContain("signed-out");
    await others.close();
  });

  it("revoking the API token ends a stream opened with it", async () => {
    const user = await createTestUser(getDb(), "viewer");
    const stream = await openLive(user.authHeaders());
    const [token] = await getDb().query.apiTokens.findMany({
      where: (t, { eq: equals }) => equals(t.userId, user.user.id),
    });
    await revokeApiToken(getDb(), token!.id, null);
    await stream.endedWithin(PROMPT_MS);
    expect(stream.events.at(-1)).toBe("signed-out");
  });

  it("disabling the user ends their run log stream too", async () => {
    const user = await createTestUser(getDb(), "viewer");
    const [run] = await getDb()
      .insert(runs)
      .values({ pipeline: "test", currentStep: "S" })
      .returning({ id: runs.id });
    const response = await logStream(
      new Request(`http://127.0.0.1/api/runs/${run!.id}/log/stream`, {
        headers: user.cookieHeaders(),
      }),
      routeParams({ runId: run!.id }),
    );
    expect(response.status).toBe(200);
    const stream = readStream(response);
    await until(() => stream.events.includes("live"));
    await setUserDisabled(getDb(), user.user.id, true);
    await stream.endedWithin(PROMPT_MS);
    expect(stream.events.at(-1)).toBe("signed-out");
  });

  it("a role change re-checks at once and keeps a stream the new role may still read", async () => {
    const user = await createTestUser(getDb(), "operator");
    const stream = await openLive(user.cookieHeaders());
    await changeUserRole(getDb(), user.user.id, "viewer");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(stream.ended).toBe(false);
    // …and the same stream still ends when the session does (the watch is still running).
    await invalidateSessionToken(getDb(), user.sessionToken);
    await stream.endedWithin(PROMPT_MS);
    expect(stream.events.at(-1)).toBe("signed-out");
  });
});

describe("the periodic re-check", () => {
  it("ends a stream whose session went idle, without counting the re-checks as activity", async () => {
    const user = await createTestUser(getDb(), "viewer");
    const db = getDb();
    // Seen 2 minutes ago: a touching check would move last_seen_at (its resolution is 1 minute).
    const seen = new Date(Date.now() - 2 * 60_000);
    await db.update(sessions).set({ lastSeenAt: seen }).where(eq(sessions.userId, user.user.id));
    const request = new Request("http://127.0.0.1/api/live", { headers: user.cookieHeaders() });
    const { requestStillAllowed } = await import("@/lib/auth/actor");
    let revoked = 0;
    const stop = watchStreamAccess({
      actor: { userId: user.user.id, name: user.user.name, role: "viewer" },
      listener: getLiveListener(),
      stillAllowed: () => requestStillAllowed(request, "viewer"),
      everyMs: 30,
    })(() => (revoked += 1));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(revoked).toBe(0);
    const [row] = await db.select().from(sessions).where(eq(sessions.userId, user.user.id));
    expect(row!.lastSeenAt.getTime()).toBe(seen.getTime());

    // Now idle past the 12 h limit, with nothing notified: the timer alone finds out.
    await db
      .update(sessions)
      .set({ lastSeenAt: new Date(Date.now() - 13 * 60 * 60_000) })
      .where(eq(sessions.userId, user.user.id));
    await until(() => revoked > 0, 2_000);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(revoked).toBe(1); // once, and the watch stopped itself
    stop();
  });

  it("keeps the stream when the check cannot reach the database: could not ask is not signed out", async () => {
    let calls = 0;
    let answer: "unreachable" | "no" = "unreachable";
    let revoked = 0;
    const stop = watchStreamAccess({
      actor: { userId: null, name: "automation", role: "viewer" },
      listener: getLiveListener(),
      stillAllowed: async () => {
        calls += 1;
        if (answer === "unreachable") throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
        return false;
      },
      everyMs: 20,
    })(() => (revoked += 1));
    await until(() => calls >= 5);
    expect(revoked).toBe(0);
    answer = "no";
    await until(() => revoked === 1);
    stop();
  });
});
