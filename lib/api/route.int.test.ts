import { beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { getDb } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { json } from "./respond";
import { route } from "./route";

/* The route wrapper's frame, on routes made up here (the real ones have their own tests). */

registerProcessTestDatabase();
let admin: TestUser;
beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
});

const id = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";
const post = (body?: string, url = "http://test/api/things") =>
  new Request(url, {
    method: "POST",
    headers: admin.authHeaders(),
    ...(body === undefined ? {} : { body }),
  });
const context = (params: Record<string, string>) => ({ params: Promise.resolve(params) });
const answer = async (response: Response) => ({
  status: response.status,
  body: (await response.json()) as { error: string; fieldErrors: Record<string, string[]> },
});

const ZThing = z.object({
  name: z.string().min(1, "Name it."),
  source: z.object({ host: z.string().min(1, "Which host?") }).optional(),
});

describe("route", () => {
  it("checks the role before reading any input", async () => {
    const handle = vi.fn();
    const POST = route(
      "POST /api/things/[thingId]",
      {
        role: "operator",
        summary: "t",
        params: { thingId: z.uuid() },
        body: { schema: ZThing },
      },
      handle,
    );
    const anonymous = new Request("http://test/api/things/x", { method: "POST", body: "{nope" });
    expect((await answer(await POST(anonymous, context({ thingId: "x" })))).status).toBe(401);
    expect(handle).not.toHaveBeenCalled();
  });

  it("hands the handler the actor, the ids, the query and the body as their schemas parsed them", async () => {
    const GET = route(
      "GET /api/things/[thingId]",
      {
        role: "viewer",
        summary: "t",
        params: { thingId: z.uuid() },
        query: { schema: z.object({ limit: z.coerce.number().default(5) }) },
      },
      async (input) => json({ actor: input.actor.name, params: input.params, query: input.query }),
    );
    const response = await GET(
      new Request("http://test/api/things/x?limit=7", { headers: admin.authHeaders() }),
      context({ thingId: id }),
    );
    expect(await response.json()).toEqual({
      actor: admin.user.name,
      params: { thingId: id },
      query: { limit: 7 },
    });
  });

  it("answers a malformed id with 400 naming it, and bad fields keyed by path or by field", async () => {
    const ok = async () => json({});
    const byPath = route(
      "POST /api/things",
      { role: "admin", summary: "t", body: { schema: ZThing } },
      ok,
    );
    const byField = route(
      "POST /api/things",
      { role: "admin", summary: "t", body: { schema: ZThing }, errorKeys: "field" },
      ok,
    );
    const bad = JSON.stringify({ name: "", source: { host: "" } });
    expect(await answer(await byPath(post(bad)))).toMatchObject({
      status: 400,
      body: { fieldErrors: { name: ["Name it."], "source.host": ["Which host?"] } },
    });
    expect((await answer(await byField(post(bad)))).body.fieldErrors).toEqual({
      name: ["Name it."],
      source: ["Which host?"],
    });
    const withId = route(
      "POST /api/things/[thingId]",
      { role: "admin", summary: "t", params: { thingId: z.uuid({ error: "Not a thing id." }) } },
      ok,
    );
    expect(await answer(await withId(post(), context({ thingId: "x" })))).toEqual({
      status: 400,
      body: { error: "Not a thing id.", fieldErrors: { thingId: ["Not a thing id."] } },
    });
  });

  it("reads the body as the spec says: JSON, an object, optional, with fields from the path", async () => {
    const echo = route(
      "POST /api/things/[thingId]",
      {
        role: "admin",
        summary: "t",
        body: {
          schema: z.object({ id: z.uuid(), note: z.string().optional() }),
          optional: true,
          fromPath: { thingId: "id" },
        },
      },
      async ({ body }) => json(body),
    );
    expect(await (await echo(post(""), context({ thingId: id }))).json()).toEqual({ id });
    expect(
      await (await echo(post('{"note":"n","id":"ignored"}'), context({ thingId: id }))).json(),
    ).toEqual({ id, note: "n" });
    expect((await answer(await echo(post("{nope"), context({ thingId: id })))).body.error).toBe(
      "The request body is not valid JSON.",
    );
    expect((await answer(await echo(post("[1]"), context({ thingId: id })))).body.error).toMatch(
      /must be a JSON object/,
    );
    const required = route(
      "POST /api/things",
      { role: "admin", summary: "t", body: { schema: ZThing } },
      async () => json({}),
    );
    expect((await answer(await required(post("")))).status).toBe(400);
  });

  it("maps what the handler throws, and carries its definition for the API document", async () => {
    const GET = route("GET /api/things", { role: "viewer", summary: "Things" }, async () => {
      throw new AppError("conflict", "Not now.");
    });
    const request = new Request("http://test/api/things", { headers: admin.authHeaders() });
    expect(await answer(await GET(request))).toEqual({
      status: 409,
      body: { error: "Not now.", fieldErrors: {} },
    });
    expect(GET.definition).toMatchObject({
      method: "GET",
      path: "/api/things",
      role: "viewer",
      summary: "Things",
    });
  });
});
