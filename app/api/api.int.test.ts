import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as hostRoute from "./hosts/[hostId]/route";
import * as hostsRoute from "./hosts/route";
import * as abortRoute from "./runs/[runId]/abort/route";
import * as runRoute from "./runs/[runId]/route";
import * as retryRoute from "./runs/[runId]/retry/route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
// Every call is made as a signed-in operator through a real API token.
let signedIn: TestUser;
const auth = (extra?: Record<string, string>) => signedIn.authHeaders(extra);

beforeAll(async () => {
  signedIn = await createTestUser(getDb(), "operator");
});

const post = (body: string) =>
  new Request("http://test/api/hosts", {
    method: "POST",
    headers: auth({ "content-type": "application/json" }),
    body,
  });
const validHost = {
  name: "pve-01",
  address: "10.0.0.5",
  sshPort: 22,
  sshUser: "root",
  authMethod: "password",
  password: "correct horse",
};
const unknownId = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";

describe("JSON API", () => {
  let hostId = "";
  let runId = "";

  it("POST /api/hosts adds a host and answers 201 { hostId, runId }", async () => {
    const response = await hostsRoute.POST(post(JSON.stringify(validHost)));
    expect(response.status).toBe(201);
    ({ hostId, runId } = (await response.json()) as { hostId: string; runId: string });
    expect(hostId).toMatch(/^[0-9a-f-]{36}$/);
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("POST /api/hosts answers a taken name with 409 and a field error", async () => {
    const response = await hostsRoute.POST(post(JSON.stringify(validHost)));
    expect(response.status).toBe(409);
    const body = (await response.json()) as {
      error: string;
      fieldErrors: Record<string, string[]>;
    };
    expect(body.error).toContain("pve-01");
    expect(body.fieldErrors.name).toBeDefined();
  });

  it("POST /api/hosts answers invalid JSON and invalid input with 400 { error, fieldErrors }", async () => {
    const notJson = await hostsRoute.POST(post("{nope"));
    expect(notJson.status).toBe(400);
    const invalid = await hostsRoute.POST(
      post(JSON.stringify({ ...validHost, name: "", sshPort: 0 })),
    );
    expect(invalid.status).toBe(400);
    const body = (await invalid.json()) as { fieldErrors: Record<string, string[]> };
    expect(Object.keys(body.fieldErrors).sort()).toEqual(["name", "sshPort"]);
  });

  it("GET /api/hosts lists hosts without secrets", async () => {
    const response = await hostsRoute.GET(
      new Request("http://test/api/hosts", { headers: auth() }),
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain("pve-01");
    expect(text).not.toContain("correct horse");
  });

  it("GET /api/hosts/[hostId]: the host, 404 for an unknown id, 400 for a malformed one", async () => {
    const found = await hostRoute.GET(
      new Request("http://test", { headers: auth() }),
      params({ hostId }),
    );
    expect(found.status).toBe(200);
    const host = (await found.json()) as { latestRun: { id: string; timeline: unknown[] } };
    expect(host.latestRun.id).toBe(runId);
    expect(host.latestRun.timeline.length).toBeGreaterThan(0);
    expect(
      (
        await hostRoute.GET(
          new Request("http://test", { headers: auth() }),
          params({ hostId: unknownId }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await hostRoute.GET(
          new Request("http://test", { headers: auth() }),
          params({ hostId: "x'; drop" }),
        )
      ).status,
    ).toBe(400);
  });

  it("GET /api/runs/[runId]: the run, 404 unknown, 400 malformed", async () => {
    expect(
      (await runRoute.GET(new Request("http://test", { headers: auth() }), params({ runId })))
        .status,
    ).toBe(200);
    expect(
      (
        await runRoute.GET(
          new Request("http://test", { headers: auth() }),
          params({ runId: unknownId }),
        )
      ).status,
    ).toBe(404);
    expect(
      (await runRoute.GET(new Request("http://test", { headers: auth() }), params({ runId: "42" })))
        .status,
    ).toBe(400);
  });

  it("retry of a running run is a 409; abort is accepted (202); unknown run 404", async () => {
    const request = new Request("http://test", { method: "POST", headers: auth() });
    expect((await retryRoute.POST(request, params({ runId }))).status).toBe(409);
    expect((await abortRoute.POST(request, params({ runId }))).status).toBe(202);
    expect((await abortRoute.POST(request, params({ runId: unknownId }))).status).toBe(404);
    expect((await retryRoute.POST(request, params({ runId: "nope" }))).status).toBe(400);
  });
});
