import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { consoleProcessRestarts } from "@/lib/db/schema";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { GET } from "./route";

registerProcessTestDatabase();
let viewer: TestUser;

beforeAll(async () => {
  viewer = await createTestUser(getDb(), "viewer");
});

const ask = async (headers: Record<string, string>) => {
  const response = await GET(new Request("http://test/api/crash-loops", { headers }));
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

/** The moment the test's restarts are counted back from. */
const base = Date.now();

/** Restarts of `process` that ended `secondsAgo` before `base`, as the supervisor records them. */
const restarted = (process: string, secondsAgo: number[], ending = "exit code 1") =>
  getDb()
    .insert(consoleProcessRestarts)
    .values(
      secondsAgo.map((s) => ({
        process,
        endedAt: new Date(base - s * 1_000),
        ending,
        upMs: 2_000,
        restartDelayMs: 1_000,
      })),
    );

describe("GET /api/crash-loops", () => {
  it("needs a signed-in user", async () => {
    expect((await ask({})).status).toBe(401);
  });

  it("names a process once it restarted 5 times within 5 minutes, and no other", async () => {
    // Four recent worker restarts, two older than the window: not a loop yet.
    await restarted("worker", [400, 350, 50, 40, 30, 20]);
    await restarted("database", [15, 5], "server process gone, says pg_ctl status");
    expect((await ask(viewer.authHeaders())).body).toEqual({ crashLoops: [] });

    await restarted("worker", [10], "killed by SIGKILL");
    const asked = Date.now();
    const { status, body } = await ask(viewer.authHeaders());
    const answered = Date.now();
    expect(status).toBe(200);
    const loops = body.crashLoops as Record<string, unknown>[];
    expect(loops).toHaveLength(1);
    expect(loops[0]).toMatchObject({
      process: "worker",
      restarts: 5,
      windowMinutes: 5,
      lastEnding: "killed by SIGKILL",
    });
    // Over when the oldest of the five (50 s before base) is 5 minutes old, counted from the
    // moment the route answered (between asked and answered, however long each step took).
    const calmsAt = base - 50_000 + 5 * 60_000;
    expect(loops[0]!.calmsInMs).toBeGreaterThanOrEqual(calmsAt - answered);
    expect(loops[0]!.calmsInMs).toBeLessThanOrEqual(calmsAt - asked);
  });
});
