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

/** Restarts of `process` that ended `secondsAgo` before now, as the supervisor records them. */
const restarted = (process: string, secondsAgo: number[], ending = "exit code 1") =>
  getDb()
    .insert(consoleProcessRestarts)
    .values(
      secondsAgo.map((s) => ({
        process,
        endedAt: new Date(Date.now() - s * 1_000),
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
    const { status, body } = await ask(viewer.authHeaders());
    expect(status).toBe(200);
    const loops = body.crashLoops as Record<string, unknown>[];
    expect(loops).toHaveLength(1);
    expect(loops[0]).toMatchObject({
      process: "worker",
      restarts: 5,
      windowMinutes: 5,
      lastEnding: "killed by SIGKILL",
    });
    // Over when the oldest of the five (50 s ago) is 5 minutes old: in about 250 s.
    expect(loops[0]!.calmsInMs).toBeGreaterThan(240_000);
    expect(loops[0]!.calmsInMs).toBeLessThanOrEqual(250_000);
  });
});
