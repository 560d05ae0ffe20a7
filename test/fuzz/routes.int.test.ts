import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { UNEXPECTED_MESSAGE } from "@/lib/api/respond";
import { ensureConsoleKeyAt } from "@/lib/console-key/ensure-at-start";
import { getDb, getPool } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { HOSTILE_STRINGS, hostileObject, hostileString, hostileValue, QUERY_KEYS } from "./hostile";
import { fuzzInBatches } from "./batches";
import { FUZZ_RUNS, FUZZ_SEED } from "./settings";

/*
 * Every route handler under app/api (found by glob, so a new route is fuzzed without editing
 * this file) gets FUZZ_RUNS hostile requests (test/fuzz/settings.ts): hostile path parameters, query strings, bodies,
 * content types and headers. For each: never a 500 (only a 503 the domain chose, e.g. a
 * connection test to an unreachable host, which says what to do); a refused request changes nothing in
 * the database and queues no job (no run, so no command reaches a host).
 */

const CASES_PER_HANDLER = FUZZ_RUNS;
const BATCH = 100;
const SEED = FUZZ_SEED;
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
type Method = (typeof METHODS)[number];
type Handler = (request: Request, context: { params: Promise<unknown> }) => Promise<Response>;

const apiDir = path.resolve(import.meta.dirname, "../../app/api");
const routeFiles = fs
  .readdirSync(apiDir, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(`${path.sep}route.ts`) || file === "route.ts")
  .sort();

const database = registerProcessTestDatabase();
let admin: TestUser;
/** Real ids for parameters, so hostile bodies also reach handlers that found their target. */
const realIds: Record<string, string> = {};

const validHost = {
  name: "fuzz-base",
  address: "127.0.0.1",
  sshPort: 1,
  sshUser: "root",
  authMethod: "password",
  password: "fuzz-base-password",
};

beforeAll(async () => {
  await ensureConsoleKeyAt(database.url); // as `npm start` does before serving
  admin = await createTestUser(getDb(), "admin");
  // Targets for the id parameters that are not the fuzzing admin itself (a fuzzed PATCH or
  // DELETE on the admin's own account or token would lock the rest of the run out).
  const victim = await createTestUser(getDb(), "viewer");
  const hosts = await import("@/app/api/hosts/route");
  const created = await hosts.POST(
    new Request("http://test/api/hosts", {
      method: "POST",
      headers: admin.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(validHost),
    }),
  );
  expect(created.status).toBe(201);
  const { hostId, runId } = (await created.json()) as { hostId: string; runId: string };
  const { rows: tokens } = await getPool().query<{ id: string }>(
    "select id from api_tokens where user_id = $1",
    [victim.user.id],
  );
  Object.assign(realIds, {
    hostId,
    runId,
    userId: victim.user.id,
    tokenId: tokens[0]!.id,
  });
}, 120_000);

type Case = {
  params: Record<string, string>;
  query: Array<[string, string]>;
  body: { kind: "none" } | { kind: "text"; text: string; contentType: string | null };
  headers: Record<string, string>;
  hostileAuth: boolean;
};

const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-16",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=----x",
  "application/xml",
  null,
];

const INVALID_JSON = ["{", '{"name":', "[1,2", "nul", "{'a':1}", "\u0000", '{"a":1}}', "\uFEFF{}"];

/** Header values must be bytes a real HTTP request could carry; others never reach the app. */
function headerSafe(value: string): string {
  return value.replace(/[^\t\x20-\x7e\x80-\xff]/g, "").slice(0, 8_000);
}

function caseArbitrary(paramNames: string[]): fc.Arbitrary<Case> {
  const param = fc.oneof(
    { weight: 7, arbitrary: hostileString() },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: fc.constant("<real>") },
  );
  const body = fc.oneof(
    { weight: 1, arbitrary: fc.constant({ kind: "none" as const }) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(hostileObject(validHost), fc.constantFrom(...CONTENT_TYPES))
        .map(([value, contentType]) => ({
          kind: "text" as const,
          text: JSON.stringify(value) ?? "null",
          contentType,
        })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(hostileValue(), fc.constantFrom(...CONTENT_TYPES))
        .map(([value, contentType]) => ({
          kind: "text" as const,
          text: JSON.stringify(value) ?? "undefined",
          contentType,
        })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...INVALID_JSON, ...HOSTILE_STRINGS),
          fc.constantFrom(...CONTENT_TYPES),
        )
        .map(([text, contentType]) => ({ kind: "text" as const, text, contentType })),
    },
  );
  return fc.record({
    params: fc
      .tuple(...paramNames.map(() => param))
      .map((values) =>
        Object.fromEntries(
          paramNames.map((name, i) => [
            name,
            values[i] === "<real>" ? realIdFor(name) : values[i]!,
          ]),
        ),
      ),
    query: fc.array(
      fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), hostileString()), hostileString()),
      { maxLength: 4 },
    ),
    body,
    headers: fc.record(
      { range: hostileString(), "last-event-id": hostileString(), cookie: hostileString() },
      { requiredKeys: [] },
    ),
    // One request in twenty carries a forged token: it must be refused before anything else.
    hostileAuth: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
  });
}

function realIdFor(param: string): string {
  return realIds[param] ?? realIds[`${param.replace(/Id$/, "")}Id`] ?? crypto.randomUUID();
}

function buildRequest(routePath: string, method: Method, fuzz: Case): Request {
  const url = new URL(`http://test/api/${routePath}`);
  for (const [key, value] of fuzz.query) url.searchParams.append(key, value);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(fuzz.headers)) headers[name] = headerSafe(value);
  if (fuzz.hostileAuth) {
    headers.authorization = headerSafe(`Bearer ${fuzz.headers.cookie ?? "' OR 1=1 --"}`);
  } else {
    headers.authorization = admin.authHeaders().authorization!;
  }
  const init: RequestInit = { method, headers };
  if (fuzz.body.kind === "text" && method !== "GET") {
    init.body = fuzz.body.text;
    if (fuzz.body.contentType) headers["content-type"] = fuzz.body.contentType;
  }
  return new Request(url, init);
}

type Outcome = { status: number; accepted: boolean; describe: string; unexpected: boolean };

async function send(
  handler: Handler,
  routePath: string,
  method: Method,
  fuzz: Case,
  index: number,
): Promise<Outcome> {
  const request = buildRequest(routePath, method, fuzz);
  const response = await handler(request, { params: Promise.resolve(fuzz.params) });
  // Streams (SSE, live log) never end by themselves: the status is all this test needs.
  let body = "";
  if (response.headers.get("content-type")?.includes("text/event-stream")) {
    await response.body?.cancel();
  } else {
    body = await response.text();
  }
  const describe = `${method} /api/${routePath} case ${index} (seed ${SEED}): ${JSON.stringify({
    params: fuzz.params,
    query: fuzz.query,
    body: fuzz.body.kind === "text" ? fuzz.body.text.slice(0, 300) : null,
  }).slice(0, 600)}`;
  return {
    status: response.status,
    accepted: response.status < 400,
    describe,
    // A 503 the domain chose (a host that cannot be reached) says what to do; a bug says this.
    unexpected: response.status === 500 || body.includes(UNEXPECTED_MESSAGE),
  };
}

const handlers = await Promise.all(
  routeFiles.map(async (file) => {
    const routePath = path.dirname(file).split(path.sep).join("/");
    const routeModule = (await import(path.join(apiDir, file))) as Partial<Record<Method, Handler>>;
    const paramNames = [...routePath.matchAll(/\[([^\]]+)\]/g)].map((match) => match[1]!);
    return METHODS.filter((method) => typeof routeModule[method] === "function").map((method) => ({
      routePath,
      method,
      handler: routeModule[method]!,
      paramNames,
    }));
  }),
).then((lists) => lists.flat());

describe("fuzz: every route handler under app/api", () => {
  it("finds the route handlers by glob", () => {
    expect(handlers.length).toBeGreaterThanOrEqual(15);
  });

  for (const [index, { routePath, method, handler, paramNames }] of handlers.entries()) {
    it(`${method} /api/${routePath}: ${CASES_PER_HANDLER} hostile requests, never a 500, refused ones change nothing`, async () => {
      const pool = getPool();
      // The URL is what a client would send; the handler gets the raw parameter, as Next.js
      // hands it over after decoding.
      const resolvedPath = (fuzz: Case) =>
        routePath.replace(/\[([^\]]+)\]/g, (_, name: string) =>
          encodeURIComponent(fuzz.params[name]!.replace(/[\uD800-\uDFFF]/g, "\uFFFD")),
        );
      const refused = await fuzzInBatches({
        pool,
        arbitrary: caseArbitrary(paramNames),
        runs: CASES_PER_HANDLER,
        seed: SEED + index,
        batchSize: BATCH,
        attempt: (fuzz, i) => send(handler, resolvedPath(fuzz), method, fuzz, i),
        inspect: ({ status, describe, unexpected }, fuzz) => {
          expect(unexpected, describe).toBe(false);
          expect([500, 502, 504], describe).not.toContain(status);
          if (fuzz.hostileAuth) expect(status, describe).toBe(401);
        },
      });
      // GET never changes state, and most hostile requests must be refused, not ignored.
      if (method !== "GET") expect(refused).toBeGreaterThan(CASES_PER_HANDLER / 2);
    });
  }
});
