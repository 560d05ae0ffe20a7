import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import type { FleetPage } from "@/lib/hosts/fleet-query";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { seedFleet } from "@/test/fleet-seed";
import * as hostsRoute from "./route";

// The route handler uses the process-wide database from DATABASE_URL, as in production.
const database = registerProcessTestDatabase();
let viewer: TestUser;

beforeAll(async () => {
  viewer = await createTestUser(getDb(), "viewer");
  await seedFleet(database.url, { hosts: 120, runsPerHost: 2 });
});

const get = (query: string, headers: Record<string, string> = viewer.authHeaders()) =>
  hostsRoute.GET(new Request(`http://test/api/hosts${query}`, { headers }));

describe("GET /api/hosts (fleet list)", () => {
  it("answers a viewer with the first page, counts per state and page info", async () => {
    const response = await get("");
    expect(response.status).toBe(200);
    const body = (await response.json()) as FleetPage;
    expect(body.total).toBe(120);
    expect(body.hosts).toHaveLength(50);
    expect(body.hosts[0]!.name).toBe("fleet-00001");
    expect(body.page).toEqual({ number: 1, size: 50, totalPages: 3 });
    expect(body.countsByState).toEqual({
      failed: 18,
      aborted: 0,
      onboarding: 30,
      decommissioning: 0,
      active: 72,
      retired: 0,
    });
    expect(body.failedSteps.reduce((n, f) => n + f.count, 0)).toBe(18);
    expect(JSON.stringify(body)).not.toContain("seeded:fleet-view-only");
  });

  it("searches, filters and sorts from the query string, repeated or comma-listed states", async () => {
    const searched = (await (await get("?q=fleet-0011")).json()) as FleetPage;
    expect(searched.hosts.map((h) => h.name)).toEqual([
      "fleet-00110",
      ...Array.from({ length: 9 }, (_, i) => `fleet-0011${i + 1}`),
    ]);
    const repeated = (await (
      await get("?state=failed&state=onboarding&sort=state&dir=desc&limit=200")
    ).json()) as FleetPage;
    const listed = (await (
      await get("?state=failed,onboarding&sort=state&dir=desc&limit=200")
    ).json()) as FleetPage;
    expect(repeated.total).toBe(48);
    expect(listed.hosts.map((h) => h.id)).toEqual(repeated.hosts.map((h) => h.id));
    expect(repeated.hosts[0]!.state).toBe("onboarding");
    const attention = (await (await get("?attention=1&limit=200")).json()) as FleetPage;
    expect(attention.hosts.every((h) => h.attention.length > 0)).toBe(true);
    expect(attention.total).toBe(attention.attentionCount);
  });

  it("answers bad parameters with 400 and field errors, never a 500", async () => {
    const response = await get(`?q=${"x".repeat(101)}&state=gone&sort=colour&page=-1&limit=9999`);
    expect(response.status).toBe(400);
    const body = (await response.json()) as {
      error: string;
      fieldErrors: Record<string, string[]>;
    };
    expect(Object.keys(body.fieldErrors).sort()).toEqual(["limit", "page", "q", "sort", "state"]);
    expect(body.fieldErrors.limit).toEqual(["Show at most 200 hosts per page."]);
  });

  it("refuses a request without a session or token (401)", async () => {
    expect((await get("", {})).status).toBe(401);
  });
});
