import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { powerSelfTests } from "@/lib/db/schema";
import { runSelfTest } from "@/lib/power/self-test/run-self-test";
import { SELF_TEST_TASK } from "@/lib/power/self-test/queue-self-test";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedMonitorState, seedUps } from "@/test/power-seed";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as route from "./route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let operator: TestUser;
let viewer: TestUser;

beforeAll(async () => {
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
});

const request = (user: TestUser | null, method = "GET", body?: string) =>
  new Request("http://test/api/power/self-test", {
    method,
    headers: user ? user.authHeaders({ "content-type": "application/json" }) : {},
    ...(body === undefined ? {} : { body }),
  });

const queuedSelfTests = async () =>
  (
    await getDb().execute<{ payload: { occasion: string; requestedBy: string } }>(
      sql`select payload from graphile_worker._private_jobs where key = ${SELF_TEST_TASK}`,
    )
  ).rows;

describe("GET/POST /api/power/self-test", () => {
  it("viewers read the last self-test with each check's verdict, reason and next step; nobody without a session", async () => {
    expect((await route.GET(request(null))).status).toBe(401);
    const empty = (await (await route.GET(request(viewer))).json()) as { latest: unknown };
    expect(empty.latest).toBeNull();

    const ran = await runSelfTest(getDb(), { occasion: "button", requestedBy: "someone" });
    const response = await route.GET(request(viewer));
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      latest: {
        id: string;
        verdict: string;
        checks: { verdict: string; reason: string; next: string }[];
      };
    };
    expect(body.latest.id).toBe(ran.id);
    // Nothing is protected yet: said as a warning with what to do, not as ok.
    expect(body.latest.verdict).toBe("warning");
    expect(body.latest.checks[0]).toMatchObject({
      verdict: "warning",
      reason: expect.stringContaining("No target is protected"),
      next: expect.stringContaining("Targets page"),
    });
  });

  it("operators queue a run for the worker (202); viewers get 403; a body with fields is refused", async () => {
    expect((await route.POST(request(viewer, "POST"))).status).toBe(403);
    expect((await route.POST(request(operator, "POST", '{"force":true}'))).status).toBe(400);
    const response = await route.POST(request(operator, "POST"));
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({
      queued: true,
      message: expect.stringContaining("worker runs it"),
    });
    expect((await route.POST(request(operator, "POST", "{}"))).status).toBe(202);
    // Pressed twice: one pending self-test, for the operator who asked.
    const jobs = await queuedSelfTests();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.payload).toMatchObject({ occasion: "button", requestedBy: operator.user.name });
  });

  it("during an outage a run is refused with 409 saying why, and nothing is queued", async () => {
    await getDb().execute(
      sql`delete from graphile_worker._private_jobs where key = ${SELF_TEST_TASK}`,
    );
    const ups = await seedUps(getDb(), { name: "selftest-outage" });
    await seedMonitorState(getDb(), ups.id, { reachable: true, onBatterySince: new Date() });
    const response = await route.POST(request(operator, "POST"));
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: string }).error).toContain(
      "UPS selftest-outage is on battery",
    );
    expect(await queuedSelfTests()).toHaveLength(0);
    const skipped = await runSelfTest(getDb(), { occasion: "schedule" });
    expect(skipped.skippedReason).toContain("does not run during an outage");
    expect(await getDb().select().from(powerSelfTests)).toHaveLength(2);
  });
});
