import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { ROUTE_METHODS, type RouteHandler } from "@/lib/api/route";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { GET } from "./route";
import { API_ROUTE_MODULES } from "./routes";

/*
 * The document as a caller gets it, and its word against the routes': an input the document
 * says is incomplete is refused by the route, naming the field the document requires.
 */

registerProcessTestDatabase();
let admin: TestUser;
let viewer: TestUser;

type Schema = { type?: string; required?: string[]; properties?: Record<string, Schema> };
type Operation = {
  parameters?: { name: string; in: string; required: boolean }[];
  requestBody?: { content: { "application/json": { schema: Schema } } };
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };
let document: Document;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  viewer = await createTestUser(getDb(), "viewer");
  const response = await GET(
    new Request("http://test/api/openapi.json", { headers: viewer.authHeaders() }),
  );
  expect(response.status).toBe(200);
  document = (await response.json()) as Document;
});

/** The handler for a documented path and method, and the path filled with fresh ids. */
function handlerFor(path: string, method: string) {
  for (const routeModule of API_ROUTE_MODULES) {
    const handler = routeModule[method.toUpperCase()] as RouteHandler | undefined;
    if (handler?.definition.path.replace(/\[([^\]]+)\]/g, "{$1}") === path) {
      const params: Record<string, string> = {};
      const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
        params[name] = crypto.randomUUID();
        return params[name];
      });
      return { handler, url: `http://test${url}`, params };
    }
  }
  throw new Error(`no handler for ${method} ${path}`);
}

describe("GET /api/openapi.json", () => {
  it("answers any signed-in role with the OpenAPI 3.1 document of every route, itself included", () => {
    expect(document.openapi).toBe("3.1.0");
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(["/api/hosts", "/api/hosts/{hostId}", "/api/openapi.json"]),
    );
    const operations = Object.values(document.paths).flatMap((item) => Object.keys(item));
    expect(operations.length).toBe(
      API_ROUTE_MODULES.flatMap((routeModule) => ROUTE_METHODS.filter((m) => routeModule[m]))
        .length + 1,
    );
  });

  it("is refused without a credential, like every route", async () => {
    const response = await GET(new Request("http://test/api/openapi.json"));
    expect(response.status).toBe(401);
  });
});

describe("the document's schemas are the routes' own", () => {
  it("a body without the fields the document requires is refused, naming one of them", async () => {
    const checked: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const required = operation.requestBody?.content["application/json"].schema.required;
        if (!required?.length) continue;
        const { handler, url, params } = handlerFor(path, method);
        const response = await handler(
          new Request(url, {
            method: method.toUpperCase(),
            headers: admin.authHeaders({ "content-type": "application/json" }),
            body: "{}",
          }),
          { params: Promise.resolve(params) },
        );
        const body = (await response.json()) as { fieldErrors: Record<string, string[]> };
        expect(response.status, `${method} ${path}`).toBe(400);
        expect(Object.keys(body.fieldErrors), `${method} ${path}`).toEqual(
          expect.arrayContaining([expect.toSatisfy((key: string) => required.includes(key))]),
        );
        checked.push(`${method} ${path}`);
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining(["post /api/hosts", "post /api/tokens", "post /api/users"]),
    );
  });

  it("a query without the parameters the document requires is refused, naming them", async () => {
    const checked: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const required = (operation.parameters ?? []).filter((p) => p.in === "query" && p.required);
        if (required.length === 0) continue;
        const { handler, url, params } = handlerFor(path, method);
        const response = await handler(new Request(url, { headers: admin.authHeaders() }), {
          params: Promise.resolve(params),
        });
        const body = (await response.json()) as { fieldErrors: Record<string, string[]> };
        expect(response.status, `${method} ${path}`).toBe(400);
        for (const { name } of required) expect(body.fieldErrors).toHaveProperty(name);
        checked.push(`${method} ${path}`);
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining(["get /api/power/drills", "get /api/power/readings"]),
    );
  });

  it("a field of the wrong type by the document is refused under that field", async () => {
    const tokens = document.paths["/api/tokens"]!.post!;
    expect(tokens.requestBody?.content["application/json"].schema.properties?.label?.type).toBe(
      "string",
    );
    const { handler, url } = handlerFor("/api/tokens", "post");
    const response = await handler(
      new Request(url, {
        method: "POST",
        headers: admin.authHeaders({ "content-type": "application/json" }),
        body: JSON.stringify({ label: 42 }),
      }),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { fieldErrors: object }).fieldErrors).toHaveProperty(
      "label",
    );
  });
});
