import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as route from "./route";

// The route handler uses the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let admin: TestUser;
let operator: TestUser;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  operator = await createTestUser(getDb(), "operator");
});

const request = (user: TestUser | null, body: string) =>
  new Request("http://test/api/power/restore", {
    method: "POST",
    headers: user ? user.authHeaders({ "content-type": "application/json" }) : {},
    body,
  });

describe("POST /api/power/restore", () => {
  it("admins only: no session 401, operators 403", async () => {
    const body = JSON.stringify({ clusterId: crypto.randomUUID() });
    expect((await route.POST(request(null, body))).status).toBe(401);
    expect((await route.POST(request(operator, body))).status).toBe(403);
  });

  it("refuses what is not a cluster id, or extra fields, saying what to send", async () => {
    const bad = await route.POST(request(admin, JSON.stringify({ clusterId: "pve1" })));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({
      fieldErrors: { clusterId: ["Not a cluster id; reload the page."] },
    });
    const extra = JSON.stringify({ clusterId: crypto.randomUUID(), force: true });
    expect((await route.POST(request(admin, extra))).status).toBe(400);
  });

  it("an unknown cluster is 404 with what to do next", async () => {
    const response = await route.POST(
      request(admin, JSON.stringify({ clusterId: crypto.randomUUID() })),
    );
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      error: expect.stringContaining("refresh the cluster list"),
    });
  });
});
