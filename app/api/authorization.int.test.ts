import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import { actAs } from "@/test/next-headers";

// Server actions read cookies through next/headers; here the real session check runs against
// the cookie jar test/next-headers.ts keeps.
vi.mock("next/headers", () => import("@/test/next-headers"));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined, revalidateTag: () => undefined }));

const root = path.resolve(import.meta.dirname, "../..");
registerProcessTestDatabase();
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
});

/** Files under `dir` (relative to the repo) whose path matches, found on disk: none can hide. */
function filesUnder(dir: string, match: RegExp): string[] {
  return (fs.readdirSync(path.join(root, dir), { recursive: true }) as string[])
    .map((file) => path.join(dir, file))
    .filter((file) => match.test(file))
    .sort();
}

/** Row counts of every table: "no state change" means none of them moved. */
async function tableCounts(): Promise<Record<string, number>> {
  const tables = await getDb().execute<{ name: string }>(
    sql`select table_schema || '.' || table_name as name from information_schema.tables
        where table_schema in ('public', 'graphile_worker') and table_type = 'BASE TABLE'`,
  );
  const counts: Record<string, number> = {};
  for (const { name } of tables.rows) {
    const [schema, table] = name.split(".");
    const result = await getDb().execute<{ n: number }>(
      sql`select count(*)::int as n from ${sql.identifier(schema!)}.${sql.identifier(table!)}`,
    );
    counts[name] = result.rows[0]!.n;
  }
  return counts;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
type Handler = (
  request: Request,
  context: { params: Promise<Record<string, string>> },
) => Promise<Response>;

/** Each route file's handlers, with every dynamic segment filled with a fresh uuid. */
async function routeHandlers() {
  const files = filesUnder("app/api", /(^|\/)route\.ts$/);
  const found: {
    label: string;
    method: string;
    url: string;
    call: (init?: RequestInit) => Promise<Response>;
  }[] = [];
  for (const file of files) {
    const exported = (await import(/* @vite-ignore */ path.join(root, file))) as Record<
      string,
      unknown
    >;
    const segments = path.dirname(file).split(path.sep).slice(1);
    const params: Record<string, string> = {};
    const urlPath = segments
      .map((segment) => {
        const dynamic = /^\[(.+)\]$/.exec(segment);
        if (!dynamic) return segment;
        params[dynamic[1]!] = crypto.randomUUID();
        return params[dynamic[1]!];
      })
      .join("/");
    for (const method of METHODS) {
      const handler = exported[method] as Handler | undefined;
      if (!handler) continue;
      const url = `http://test/${urlPath}`;
      found.push({
        label: `${method} /${segments.join("/")}`,
        method,
        url,
        call: (init = {}) =>
          handler(
            new Request(url, {
              method,
              ...(method === "GET"
                ? {}
                : { body: "{}", headers: { "content-type": "application/json" } }),
              ...init,
            }),
            { params: Promise.resolve(params) },
          ),
      });
    }
  }
  return found;
}

describe("unauthenticated crawl", () => {
  it("every route handler under app/api answers 401 without credentials and with a bogus token, changing nothing", async () => {
    const handlers = await routeHandlers();
    // The crawl found the routes this test was written against, and whatever was added since.
    expect(handlers.map((h) => h.label)).toEqual(
      expect.arrayContaining([
        "GET /api/hosts",
        "POST /api/hosts",
        "POST /api/runs/[runId]/retry",
        "POST /api/runs/[runId]/abort",
        "GET /api/live",
        "GET /api/runs/[runId]/log",
        "GET /api/runs/[runId]/log/stream",
        "GET /api/catalog",
        "GET /api/users",
        "POST /api/tokens",
      ]),
    );
    const before = await tableCounts();
    for (const handler of handlers) {
      const anonymous = await handler.call();
      expect(anonymous.status, handler.label).toBe(401);
      const body = (await anonymous.json()) as { error: string };
      expect(body.error, handler.label).toMatch(/sign in|token/i);
      const bogus = await handler.call({
        method: handler.method,
        headers: {
          authorization: "Bearer clp_not-a-real-token",
          "content-type": "application/json",
        },
      });
      expect(bogus.status, handler.label).toBe(401);
      await bogus.body?.cancel();
    }
    expect(await tableCounts()).toEqual(before);
  });

  // Sign-in and first-start setup are the doors for people without a session: they are checked
  // by their own tests (credentials, setup token), sign-out only clears a cookie.
  const PUBLIC_ACTIONS = new Set(["signInAction", "completeSetupAction", "signOutAction"]);

  it("every server action in lib/actions refuses without a session (sign in) and changes nothing", async () => {
    // Server action modules are the ones marked "use server" (action-result.ts is a helper).
    const files = filesUnder("lib/actions", /\.ts$/).filter(
      (file) =>
        !file.endsWith(".test.ts") &&
        /^\s*["']use server["']/.test(fs.readFileSync(path.join(root, file), "utf8")),
    );
    const uuid = crypto.randomUUID();
    // Input that would pass validation for most actions: the refusal must come before it.
    const input = {
      runId: uuid,
      hostId: uuid,
      userId: uuid,
      tokenId: uuid,
      planId: uuid,
      planVersionId: uuid,
      name: "crawl-host",
      slug: "crawl-plan",
      address: "10.0.0.9",
      sshPort: "22",
      sshUser: "root",
      authMethod: "password",
      password: "a long enough password",
      role: "admin",
      disabled: "true",
      label: "crawl",
      currentPassword: "whatever it is",
      newPassword: "a long enough password",
      templateVmid: "9001",
      cores: "2",
      memoryMib: "2048",
      diskGib: "40",
    };
    const before = await tableCounts();
    const checked: string[] = [];
    actAs(null);
    for (const file of files) {
      const exported = (await import(/* @vite-ignore */ path.join(root, file))) as Record<
        string,
        unknown
      >;
      for (const [name, value] of Object.entries(exported)) {
        if (typeof value !== "function" || PUBLIC_ACTIONS.has(name)) continue;
        const action = value as (...args: unknown[]) => Promise<unknown>;
        const result = (await (action.length >= 2 ? action(null, input) : action(input))) as {
          ok: boolean;
          message?: string;
        };
        expect(result.ok, `${file} ${name}`).toBe(false);
        expect(result.message, `${file} ${name}`).toMatch(/sign in/i);
        checked.push(name);
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        "createHostAction",
        "retryRunAction",
        "abortRunAction",
        "reonboardHostAction",
        "createPlanAction",
        "createUserAction",
        "createApiTokenAction",
        "revokeApiTokenAction",
      ]),
    );
    expect(await tableCounts()).toEqual(before);
  });
});

describe("requests forged by another site's page", () => {
  it("every changing route handler refuses an admin's cookie sent from another site or origin, changing nothing", async () => {
    const changing = (await routeHandlers()).filter((handler) => handler.method !== "GET");
    expect(changing.map((h) => h.label)).toEqual(
      expect.arrayContaining(["POST /api/runs/[runId]/abort", "POST /api/tokens"]),
    );
    const before = await tableCounts();
    const forgeries: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site" },
      // A sibling subdomain is the same *site*: SameSite=Lax sends the cookie, this does not.
      { "sec-fetch-site": "same-site" },
      { origin: "http://evil.example", host: "test" },
      { origin: "null", host: "test" },
    ];
    for (const handler of changing) {
      for (const forged of forgeries) {
        const response = await handler.call({
          method: handler.method,
          headers: admin.cookieHeaders({ "content-type": "application/json", ...forged }),
        });
        expect(response.status, `${handler.label} ${JSON.stringify(forged)}`).toBe(403);
        expect(((await response.json()) as { error: string }).error).toMatch(/another site/);
      }
    }
    // Nothing changed but the audit log, which has each attempt in the victim's name.
    const after = await tableCounts();
    expect({ ...after, "public.audit_log": 0 }).toEqual({ ...before, "public.audit_log": 0 });
    const refusals = await getDb().execute<{ target: string; detail: { reason: string } }>(
      sql`select target, detail from audit_log where action = 'access.denied'
          and actor_name = ${admin.user.name} and detail->>'reason' = 'cross-site request'`,
    );
    expect(refusals.rows).toHaveLength(changing.length * forgeries.length);
    expect(after["public.audit_log"]).toBe(before["public.audit_log"]! + refusals.rows.length);
    expect(refusals.rows.map((row) => row.target)).toContain(
      `POST ${new URL(changing.find((h) => h.label === "POST /api/tokens")!.url).pathname}`,
    );
  });

  it("the console's own pages, scripts without a browser, and API tokens are not affected", async () => {
    const { POST } = await import("@/app/api/tokens/route");
    const create = (headers: Record<string, string>) =>
      POST(
        new Request("http://test/api/tokens", {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ label: "made here" }),
        }),
      );
    for (const headers of [
      operator.cookieHeaders({ "sec-fetch-site": "same-origin" }),
      operator.cookieHeaders({ origin: "http://test", host: "test" }),
      operator.cookieHeaders(),
      // A token is never attached by a browser on its own, whatever the request claims.
      operator.authHeaders({ "sec-fetch-site": "cross-site" }),
    ]) {
      const response = await create(headers);
      expect(response.status, JSON.stringify(Object.keys(headers))).toBe(201);
    }
  });
});

describe("roles on the server", () => {
  const json = (user: TestUser, body: unknown, method = "POST") =>
    new Request("http://test", {
      method,
      headers: user.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    });
  const host = {
    name: "pve-roles",
    address: "10.0.0.5",
    sshPort: 22,
    sshUser: "root",
    authMethod: "password",
    password: "correct horse",
  };

  it("a viewer reads but gets 403 on create host, retry and abort (API and actions)", async () => {
    const hostsRoute = await import("./hosts/route");
    const retryRoute = await import("./runs/[runId]/retry/route");
    const abortRoute = await import("./runs/[runId]/abort/route");
    const created = await hostsRoute.POST(json(operator, host));
    expect(created.status).toBe(201);
    const { runId } = (await created.json()) as { runId: string };
    const before = await tableCounts();

    expect((await hostsRoute.POST(json(viewer, { ...host, name: "pve-viewer" }))).status).toBe(403);
    const refused = await retryRoute.POST(json(viewer, {}), params({ runId }));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toContain("operator role");
    expect((await abortRoute.POST(json(viewer, {}), params({ runId }))).status).toBe(403);
    // The session cookie door refuses the same way as the token door.
    const byCookie = await abortRoute.POST(
      new Request("http://test", { method: "POST", headers: viewer.cookieHeaders() }),
      params({ runId }),
    );
    expect(byCookie.status).toBe(403);

    const { createHostAction } = await import("@/lib/actions/create-host");
    const { abortRunAction } = await import("@/lib/actions/abort-run");
    actAs(viewer);
    expect(await createHostAction(null, { ...host, name: "pve-viewer2" })).toMatchObject({
      ok: false,
      message: expect.stringContaining("operator role"),
    });
    expect(await abortRunAction({ runId })).toMatchObject({ ok: false });
    // Nothing changed but the audit log, which names each refusal with the viewer as actor.
    const after = await tableCounts();
    expect({ ...after, "public.audit_log": 0 }).toEqual({ ...before, "public.audit_log": 0 });
    expect(after["public.audit_log"]! - before["public.audit_log"]!).toBe(6);
    const denied = await getDb().execute<{ target: string; detail: Record<string, string> }>(
      sql`select target, detail from audit_log
          where action = 'access.denied' and actor_name = ${viewer.user.name} and outcome = 'denied'
          order by id`,
    );
    // The test's requests go to http://test/ (a real one names its path); actions run outside
    // the proxy here, so the page they came from is unknown.
    expect(denied.rows.map((row) => row.target)).toEqual([
      ...Array<string>(4).fill("POST /"),
      "page (unknown page)",
      "page (unknown page)",
    ]);
    expect(denied.rows[0]!.detail).toEqual({ required: "operator", role: "viewer" });

    const list = await hostsRoute.GET(
      new Request("http://test", { headers: viewer.authHeaders() }),
    );
    expect(list.status).toBe(200);
    expect(await list.text()).toContain("pve-roles");

    // The operator may: abort is accepted and audited with the operator as actor.
    actAs(operator);
    expect(await abortRunAction({ runId })).toMatchObject({ ok: true });
    const audit = await getDb().execute<{ actor_name: string; outcome: string }>(
      sql`select actor_name, outcome from audit_log where action = 'run.abort' and target = ${`run:${runId}`}`,
    );
    expect(audit.rows).toEqual([{ actor_name: operator.user.name, outcome: "success" }]);
  });

  it("an operator cannot manage users or tokens of others; an admin can", async () => {
    const usersRoute = await import("./users/route");
    const userRoute = await import("./users/[userId]/route");
    const tokensRoute = await import("./tokens/route");
    const newUser = { name: "dave", role: "viewer", password: "a long enough password" };

    expect(
      (await usersRoute.GET(new Request("http://test", { headers: operator.authHeaders() })))
        .status,
    ).toBe(403);
    expect((await usersRoute.POST(json(operator, newUser))).status).toBe(403);
    expect(
      (
        await userRoute.PATCH(
          json(operator, { role: "admin" }, "PATCH"),
          params({ userId: operator.user.id }),
        )
      ).status,
    ).toBe(403);
    const allTokens = new Request("http://test/api/tokens?all=1", {
      headers: operator.authHeaders(),
    });
    expect((await tokensRoute.GET(allTokens)).status).toBe(403);
    const { createUserAction } = await import("@/lib/actions/create-user");
    actAs(operator);
    expect(await createUserAction(null, newUser)).toMatchObject({ ok: false });

    const created = await usersRoute.POST(json(admin, newUser));
    expect(created.status).toBe(201);
    const dave = (await created.json()) as { id: string; role: string };
    expect(JSON.stringify(dave)).not.toMatch(/argon2|password/i);
    const promoted = await userRoute.PATCH(
      json(admin, { role: "operator" }, "PATCH"),
      params({ userId: dave.id }),
    );
    expect(promoted.status).toBe(200);
    expect(((await promoted.json()) as { role: string }).role).toBe("operator");
    const taken = await usersRoute.POST(json(admin, { ...newUser, name: "DAVE" }));
    expect(taken.status).toBe(409);
    const invalid = await usersRoute.POST(
      json(admin, { name: "", role: "root", password: "short" }),
    );
    expect(invalid.status).toBe(400);
    expect(
      Object.keys(((await invalid.json()) as { fieldErrors: object }).fieldErrors).sort(),
    ).toEqual(["name", "password", "role"]);
  });

  it("a personal API token: created once, listed by prefix only, acts with its owner's role, revocable", async () => {
    const tokensRoute = await import("./tokens/route");
    const tokenRoute = await import("./tokens/[tokenId]/route");
    const hostsRoute = await import("./hosts/route");
    const created = await tokensRoute.POST(json(operator, { label: "ci" }));
    expect(created.status).toBe(201);
    const { id, token, prefix } = (await created.json()) as {
      id: string;
      token: string;
      prefix: string;
    };
    const listed = await (
      await tokensRoute.GET(new Request("http://test", { headers: operator.authHeaders() }))
    ).text();
    expect(listed).toContain(prefix);
    expect(listed).not.toContain(token);

    const bearer = { authorization: `Bearer ${token}` };
    expect((await hostsRoute.GET(new Request("http://test", { headers: bearer }))).status).toBe(
      200,
    );
    // Someone else cannot revoke it; its owner can; afterwards it is refused.
    const foreign = await tokenRoute.DELETE(
      new Request("http://test", { method: "DELETE", headers: viewer.authHeaders() }),
      params({ tokenId: id }),
    );
    expect(foreign.status).toBe(404);
    const revoked = await tokenRoute.DELETE(
      new Request("http://test", { method: "DELETE", headers: operator.authHeaders() }),
      params({ tokenId: id }),
    );
    expect(revoked.status).toBe(200);
    expect((await hostsRoute.GET(new Request("http://test", { headers: bearer }))).status).toBe(
      401,
    );
    const audit = await getDb().execute<{ action: string }>(
      sql`select action from audit_log where target = ${`token:${prefix}`} order by id`,
    );
    expect(audit.rows.map((r) => r.action)).toEqual(["token.create", "token.revoke"]);
  });
});
