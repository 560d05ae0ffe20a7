import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as failingRoute from "./failing/route";
import * as acknowledgeRoute from "./targets/[targetId]/acknowledge/route";
import * as targetRoute from "./targets/[targetId]/route";
import * as testRoute from "./targets/[targetId]/test/route";
import * as targetsRoute from "./targets/route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;
let receiver: WebhookReceiver;
const HEADER_VALUE = "Bearer api-route-secret-77";

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
});

type Handler = (request: Request, context: never) => Promise<Response>;

const call = (
  handler: Handler,
  method: string,
  user: TestUser,
  body?: unknown,
  context: unknown = params({}),
) =>
  handler(
    new Request("http://test/api/notifications", {
      method,
      headers: user.authHeaders({ "content-type": "application/json" }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    context as never,
  );

describe("notifications JSON API", () => {
  it("admins add a target; its URL path and auth header value are in no answer, viewers read the cards", async () => {
    const created = await call(targetsRoute.POST, "POST", admin, {
      name: "ops-chat",
      format: "discord",
      url: receiver.url("/api/webhooks/123/very-secret-token"),
      minSeverity: "warning",
      eventKinds: ["ups.*", "shutdown.failed"],
      authHeaderName: "Authorization",
      authHeaderValue: HEADER_VALUE,
    });
    expect(created.status).toBe(201);
    const { target } = (await created.json()) as { target: { id: string } };
    expect(target).toMatchObject({
      name: "ops-chat",
      urlOrigin: receiver.url("/").replace(/\/$/, ""),
      hasAuthHeader: true,
      eventKinds: ["ups.*", "shutdown.failed"],
    });

    const list = await call(targetsRoute.GET, "GET", viewer);
    expect(list.status).toBe(200);
    const text = await list.text();
    expect(text).toContain("ops-chat");
    for (const secret of ["very-secret-token", HEADER_VALUE, "api-route-secret"]) {
      expect(text).not.toContain(secret);
      expect(JSON.stringify(target)).not.toContain(secret);
    }
  });

  it("refuses bad input with a field error under each field, and names the field to fix", async () => {
    const response = await call(targetsRoute.POST, "POST", admin, {
      name: "",
      format: "template",
      url: "ftp://example.test/x",
      template: "{{#open}} never closed",
      authHeaderName: "Content-Type",
      authHeaderValue: "x",
      eventKinds: ["not a kind!"],
    });
    expect(response.status).toBe(400);
    const { fieldErrors } = (await response.json()) as { fieldErrors: Record<string, string[]> };
    expect(Object.keys(fieldErrors).sort()).toEqual(
      ["authHeaderName", "eventKinds.0", "name", "template", "url"].sort(),
    );
    expect(fieldErrors.template![0]).toMatch(/Not a valid template: Unclosed section/);
    expect(fieldErrors.url![0]).toMatch(/http:\/\/ or https:\/\//);
  });

  it("viewers and operators cannot change or test targets; operators acknowledge failures", async () => {
    const created = await call(targetsRoute.POST, "POST", admin, {
      name: "roles",
      format: "json",
      url: receiver.url("/roles"),
    });
    const { target } = (await created.json()) as { target: { id: string } };
    const ctx = params({ targetId: target.id });
    for (const user of [viewer, operator]) {
      expect((await call(targetsRoute.POST, "POST", user, { name: "x" })).status).toBe(403);
      expect((await call(targetRoute.PATCH, "PATCH", user, { name: "y" }, ctx)).status).toBe(403);
      expect((await call(targetRoute.DELETE, "DELETE", user, undefined, ctx)).status).toBe(403);
      expect((await call(testRoute.POST, "POST", user, undefined, ctx)).status).toBe(403);
    }
    expect((await call(acknowledgeRoute.POST, "POST", viewer, undefined, ctx)).status).toBe(403);
    const ack = await call(acknowledgeRoute.POST, "POST", operator, undefined, ctx);
    expect(ack.status).toBe(200);
    expect(await ack.json()).toEqual({ acknowledged: 0 });
    expect((await call(failingRoute.GET, "GET", viewer)).status).toBe(200);
  });

  it("Test sends a real message and answers the receiver's verdict; PATCH keeps the stored URL; DELETE removes", async () => {
    const created = await call(targetsRoute.POST, "POST", admin, {
      name: "tested",
      format: "ntfy",
      url: receiver.url("/tested"),
    });
    const { target } = (await created.json()) as { target: { id: string } };
    const ctx = params({ targetId: target.id });
    const tested = await call(testRoute.POST, "POST", admin, undefined, ctx);
    expect(await tested.json()).toEqual({ outcome: { ok: true, status: 200 } });
    expect(receiver.received("/tested")[0]!.headers.title).toBe("Test message: tested");

    const patched = await call(targetRoute.PATCH, "PATCH", admin, { minSeverity: "critical" }, ctx);
    expect(patched.status).toBe(200);
    receiver.setMode("fail", "/tested");
    const failed = await call(testRoute.POST, "POST", admin, undefined, ctx);
    expect(await failed.json()).toEqual({
      outcome: {
        ok: false,
        status: 500,
        error: "answered HTTP 500 Internal Server Error: lab receiver told to fail",
      },
    });
    expect(receiver.received("/tested")).toHaveLength(2);

    expect((await call(targetRoute.DELETE, "DELETE", admin, undefined, ctx)).status).toBe(204);
    expect((await call(targetRoute.DELETE, "DELETE", admin, undefined, ctx)).status).toBe(404);
  });
});
