import { createRequire } from "node:module";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getDb, getPool, schema } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedHost, seedUps } from "@/test/power-seed";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as modeRoute from "./mode/route";
import * as planRoute from "./plan/route";
import * as settingsRoute from "./settings/route";
import * as targetRoute from "./targets/[targetId]/route";
import * as targetsRoute from "./targets/route";
import * as upsDeviceRoute from "./ups/[upsId]/route";

/*
 * Issue 29, item 13: while armed, PATCH settings / UPS / target without confirmPlanChange
 * answered 500 (`DrizzleError: Rollback`) instead of 409 with the plan change. The preview of a
 * change runs it in a transaction that is rolled back, and told the rollback from a real error
 * by `instanceof TransactionRollbackError` — a class of the copy of drizzle-orm this module
 * imported. The process-wide handle (lib/db/client.ts, kept on globalThis) is made by whichever
 * copy loaded first, and under Next.js a route's bundle may carry a copy of its own: then the
 * error is another class and escaped. Each route runs here with a handle of this copy and with
 * one made by another copy (drizzle-orm's CommonJS build).
 */

const database = registerProcessTestDatabase();
type PlanChange = { changed: boolean; lines: string[] };
type Answer = { status: number; body: { error?: string; planChange: PlanChange } };

const HANDLES = {
  "this copy of drizzle-orm": () => null,
  "another copy of drizzle-orm": () => {
    const { drizzle } = createRequire(import.meta.url)(
      "drizzle-orm/node-postgres",
    ) as typeof import("drizzle-orm/node-postgres");
    const pool = new pg.Pool({ connectionString: database.url, max: 4 });
    return { pool, db: drizzle(pool, { schema }) };
  },
} as const;

describe.each(Object.entries(HANDLES))("while armed, with the database handle of %s", (_, make) => {
  let admin: TestUser;
  let ups: { id: string; name: string };
  let target: { id: string };

  beforeAll(async () => {
    const handle = make();
    if (handle) {
      await getPool().end();
      (globalThis as { __clupilotDb?: unknown }).__clupilotDb = handle;
    }
    admin = await createTestUser(getDb(), "admin");
    ups = await seedUps(getDb());
    const host = await seedHost(getDb());
    const created = await send(targetsRoute.POST, "POST", "/api/power/targets", {
      kind: "pve-node",
      hostId: host.id,
      feeds: [ups.id],
      feedPolicy: "any",
    });
    expect(created.status).toBe(201);
    ({ target } = created.body as unknown as { target: { id: string } });
    const plan = await planRoute.GET(
      new Request("http://test/api/power/plan", { headers: admin.authHeaders() }),
    );
    const { armingTargets } = (await plan.json()) as { armingTargets: { id: string }[] };
    const armed = await send(modeRoute.POST, "POST", "/api/power/mode", {
      mode: "armed",
      confirmedTargetIds: armingTargets.map((t) => t.id),
    });
    expect(armed.status).toBe(200);
  });

  afterAll(async () => {
    await send(modeRoute.POST, "POST", "/api/power/mode", { mode: "dry-run" });
  });

  async function send(
    handler: (request: Request, context: never) => Promise<Response>,
    method: string,
    path: string,
    body: unknown,
    context: unknown = params({}),
  ): Promise<Answer> {
    const response = await handler(
      new Request(`http://test${path}`, {
        method,
        headers: admin.authHeaders({ "content-type": "application/json" }),
        body: JSON.stringify(body),
      }),
      context as never,
    );
    return { status: response.status, body: (await response.json()) as Answer["body"] };
  }

  const saved = async () =>
    (
      await getDb().execute<{ timeout: number; name: string; stage: number }>(sql`
        select (select (shutdown->>'callTimeoutSeconds')::int from power_settings) as timeout,
          (select name from ups_devices where id = ${ups.id}) as name,
          (select stage from power_targets where id = ${target.id}) as stage`)
    ).rows[0]!;

  const patches = () => ({
    settings: (change: object) => send(settingsRoute.PATCH, "PATCH", "/api/power/settings", change),
    ups: (change: object) =>
      send(
        upsDeviceRoute.PATCH,
        "PATCH",
        `/api/power/ups/${ups.id}`,
        change,
        params({ upsId: ups.id }),
      ),
    target: (change: object) =>
      send(
        targetRoute.PATCH,
        "PATCH",
        `/api/power/targets/${target.id}`,
        change,
        params({ targetId: target.id }),
      ),
  });

  it("a change of the plan without confirmPlanChange is a 409 saying what it would change, and nothing is saved", async () => {
    const before = await saved();
    const patch = patches();
    const cases: [string, () => Promise<Answer>, RegExp][] = [
      [
        "settings",
        () => patch.settings({ shutdown: { callTimeoutSeconds: before.timeout + 20 } }),
        new RegExp(`^${ups.name}: budget .* ⇒ budget `),
      ],
      ["ups", () => patch.ups({ name: `${before.name}-2` }), /: fed by \[.*\] ⇒ \[.*-2\]$/],
      ["target", () => patch.target({ stage: before.stage + 2 }), /: stage \d+ ⇒ \d+$/],
    ];
    for (const [label, call, line] of cases) {
      const { status, body } = await call();
      expect(status, `${label}: ${JSON.stringify(body)}`).toBe(409);
      expect(body.error, label).toMatch(/confirmPlanChange: true/);
      expect(body.planChange.changed, label).toBe(true);
      expect(
        body.planChange.lines.some((l) => line.test(l)),
        `${label}: ${body.planChange.lines.join(" | ")}`,
      ).toBe(true);
    }
    expect(await saved()).toEqual(before);
  });

  it("an unchanged value changes no plan: it is saved without asking (200, planChange.changed false)", async () => {
    const before = await saved();
    const patch = patches();
    const cases: [string, () => Promise<Answer>][] = [
      ["settings", () => patch.settings({ shutdown: { callTimeoutSeconds: before.timeout } })],
      ["ups", () => patch.ups({ name: before.name })],
      ["target", () => patch.target({ stage: before.stage })],
    ];
    for (const [label, call] of cases) {
      const { status, body } = await call();
      expect(status, `${label}: ${JSON.stringify(body)}`).toBe(200);
      expect(body.planChange, label).toEqual({ changed: false, lines: [] });
    }
    expect(await saved()).toEqual(before);
  });

  it("confirmed, the change is saved and says what it changed", async () => {
    const before = await saved();
    const patch = patches();
    const confirmPlanChange = true;
    const cases: [string, () => Promise<Answer>][] = [
      [
        "settings",
        () =>
          patch.settings({
            shutdown: { callTimeoutSeconds: before.timeout + 1 },
            confirmPlanChange,
          }),
      ],
      ["ups", () => patch.ups({ name: `${before.name}-3`, confirmPlanChange })],
      ["target", () => patch.target({ stage: before.stage + 1, confirmPlanChange })],
    ];
    for (const [label, call] of cases) {
      const { status, body } = await call();
      expect(status, `${label}: ${JSON.stringify(body)}`).toBe(200);
      expect(body.planChange.changed, label).toBe(true);
    }
    expect(await saved()).toEqual({
      timeout: before.timeout + 1,
      name: `${before.name}-3`,
      stage: before.stage + 1,
    });
  });
});
