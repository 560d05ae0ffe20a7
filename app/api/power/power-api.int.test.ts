import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedEvent, seedHost, seedMonitorState, seedReadings, seedUps } from "@/test/power-seed";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as acknowledgeRoute from "./events/[eventId]/acknowledge/route";
import * as eventsRoute from "./events/route";
import * as modeRoute from "./mode/route";
import * as planRoute from "./plan/route";
import * as powerBackRoute from "./power-back/route";
import * as readingsRoute from "./readings/route";
import * as overviewRoute from "./route";
import * as settingsRoute from "./settings/route";
import * as shutdownRunRoute from "./shutdown-run/route";
import * as targetRoute from "./targets/[targetId]/route";
import * as targetsRoute from "./targets/route";
import * as releaseLatchRoute from "./ups/[upsId]/release-latch/route";
import * as upsDeviceRoute from "./ups/[upsId]/route";
import * as upsRoute from "./ups/route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;

// Saving a NUT UPS logs in first (ups/ups-login-check.int.test.ts): a lab UPS's NUT face takes
// the login of the UPS these tests save.
let nutServer: LabUps;

beforeAll(async () => {
  nutServer = await startLabUps({
    name: "lab",
    nut: { username: "monuser", password: NUT_PASSWORD },
    snmp: false,
  });
  admin = await createTestUser(getDb(), "admin");
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
});

afterAll(async () => {
  await nutServer?.stop();
});

type ErrorBody = { error: string; fieldErrors: Record<string, string[]> };

const get = (
  handler: (request: Request) => Promise<Response>,
  path: string,
  user: TestUser | null,
) => handler(new Request(`http://test${path}`, { headers: user ? user.authHeaders() : {} }));

describe("power JSON API: reading", () => {
  it("every reader answers a viewer (viewers see everything) and refuses nobody with 401", async () => {
    const ups = await seedUps(getDb());
    const readers: [(request: Request) => Promise<Response>, string][] = [
      [overviewRoute.GET, "/api/power"],
      [modeRoute.GET, "/api/power/mode"],
      [readingsRoute.GET, `/api/power/readings?upsId=${ups.id}`],
      [eventsRoute.GET, "/api/power/events"],
      [targetsRoute.GET, "/api/power/targets"],
      [shutdownRunRoute.GET, "/api/power/shutdown-run"],
    ];
    for (const [handler, path] of readers) {
      expect((await get(handler, path, viewer)).status, path).toBe(200);
      expect((await get(handler, path, null)).status, path).toBe(401);
    }
  });

  it("GET /api/power: the mode (dry-run on a fresh installation), the console's clock and a card per UPS", async () => {
    const ups = await seedUps(getDb(), { name: "api-card" });
    await seedMonitorState(getDb(), ups.id, {
      reachable: true,
      lastReading: {
        at: "2026-12-01T10:00:00Z",
        onBattery: true,
        lowBattery: false,
        chargePercent: 64,
        runtimeSeconds: 700,
        reportedSecondsOnBattery: 900,
        rawStatus: "OB DISCHRG",
      },
      onBatterySince: new Date("2026-12-01T09:59:00Z"),
    });
    const response = await get(overviewRoute.GET, "/api/power", operator);
    const body = (await response.json()) as {
      serverTime: string;
      mode: { mode: string };
      ups: { name: string; condition: string; onBatterySince: string }[];
    };
    expect(body.mode.mode).toBe("dry-run");
    expect(Math.abs(Date.parse(body.serverTime) - Date.now())).toBeLessThan(60_000);
    expect(body.ups.find((u) => u.name === "api-card")).toMatchObject({
      condition: "on-battery",
      onBatterySince: "2026-12-01T09:59:00.000Z",
    });
  });

  it("GET /api/power/readings: the window's points; a bad UPS id or window is a 400 with field errors, never a 500", async () => {
    const ups = await seedUps(getDb());
    await seedReadings(getDb(), ups.id, [
      { at: new Date(Date.now() - 60_000), reachable: true, onBattery: true, chargePercent: 50 },
    ]);
    const ok = await get(readingsRoute.GET, `/api/power/readings?upsId=${ups.id}`, viewer);
    expect(((await ok.json()) as { points: unknown[] }).points).toHaveLength(1);

    for (const [query, field] of [
      ["upsId=ups1", "upsId"],
      ["", "upsId"],
      [`upsId=${ups.id}&from=yesterday`, "from"],
      [`upsId=${ups.id}&from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z`, "to"],
    ] as const) {
      const response = await get(readingsRoute.GET, `/api/power/readings?${query}`, viewer);
      expect(response.status, query).toBe(400);
      expect(Object.keys(((await response.json()) as ErrorBody).fieldErrors), query).toContain(
        field,
      );
    }
  });

  it("GET /api/power/events: filters and cursor from the query string; bad filters are 400 field errors", async () => {
    const ups = await seedUps(getDb());
    const older = await seedEvent(getDb(), {
      severity: "critical",
      kind: "trigger.fired",
      upsId: ups.id,
    });
    const newer = await seedEvent(getDb(), {
      severity: "warning",
      kind: "ups.on_battery",
      upsId: ups.id,
    });
    await seedEvent(getDb(), { severity: "info", kind: "ups.mains_back", upsId: ups.id });
    const page = async (query: string) => {
      const response = await get(eventsRoute.GET, `/api/power/events?${query}`, viewer);
      expect(response.status, query).toBe(200);
      return (await response.json()) as { events: { id: number }[]; nextCursor: string | null };
    };
    const first = await page(`upsId=${ups.id}&severity=warning&limit=1`);
    expect(first.events.map((e) => e.id)).toEqual([newer]);
    const second = await page(
      `upsId=${ups.id}&severity=warning&limit=1&cursor=${first.nextCursor}`,
    );
    expect(second.events.map((e) => e.id)).toEqual([older]);

    const bad = await get(eventsRoute.GET, "/api/power/events?severity=loud&limit=0", viewer);
    expect(bad.status).toBe(400);
    expect(Object.keys(((await bad.json()) as ErrorBody).fieldErrors).sort()).toEqual([
      "limit",
      "severity",
    ]);
  });

  it("an admin reads the same as a viewer: reading needs no more than the viewer role", async () => {
    const asAdmin = await get(targetsRoute.GET, "/api/power/targets", admin);
    const asViewer = await get(targetsRoute.GET, "/api/power/targets", viewer);
    expect(await asAdmin.json()).toEqual(await asViewer.json());
  });
});

const send = (
  handler: (request: Request, context: never) => Promise<Response>,
  method: string,
  path: string,
  user: TestUser,
  body?: unknown,
  context: unknown = params({}),
) =>
  handler(
    new Request(`http://test${path}`, {
      method,
      headers: user.authHeaders({ "content-type": "application/json" }),
      ...(body === undefined
        ? {}
        : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    }),
    context as never,
  );

async function configurationCounts() {
  const { rows } = await getDb().execute<{ ups: number; targets: number; settings: number }>(sql`
    select (select count(*)::int from ups_devices) as ups,
      (select count(*)::int from power_targets) as targets,
      (select count(*)::int from power_settings) as settings`);
  return rows[0]!;
}

const NUT_PASSWORD = "nut-secret-do-not-show";
const nutUps = (name: string) => ({
  name,
  source: {
    type: "nut",
    host: "127.0.0.1",
    port: nutServer.nut!.port,
    upsName: "lab",
    username: "monuser",
    password: NUT_PASSWORD,
  },
});

async function planTargets(user: TestUser): Promise<{ id: string; name: string }[]> {
  const response = await get(planRoute.GET, "/api/power/plan", user);
  expect(response.status).toBe(200);
  return ((await response.json()) as { armingTargets: { id: string; name: string }[] })
    .armingTargets;
}

describe("power JSON API: changing", () => {
  it("viewers get 403 on every change, operators too on arming and configuration; nothing changes", async () => {
    const ups = await seedUps(getDb());
    const host = await seedHost(getDb());
    const before = await configurationCounts();
    const changes: [string, () => (user: TestUser) => Promise<Response>][] = [
      [
        "POST mode",
        () => (u) => send(modeRoute.POST, "POST", "/api/power/mode", u, { mode: "dry-run" }),
      ],
      [
        "PATCH settings",
        () => (u) =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", u, { pollIntervalMs: 2000 }),
      ],
      [
        "POST ups",
        () => (u) => send(upsRoute.POST, "POST", "/api/power/ups", u, nutUps("refused-ups")),
      ],
      [
        "PATCH ups",
        () => (u) =>
          send(
            upsDeviceRoute.PATCH,
            "PATCH",
            `/api/power/ups/${ups.id}`,
            u,
            { name: "renamed" },
            params({ upsId: ups.id }),
          ),
      ],
      [
        "DELETE ups",
        () => (u) =>
          send(
            upsDeviceRoute.DELETE,
            "DELETE",
            `/api/power/ups/${ups.id}`,
            u,
            undefined,
            params({ upsId: ups.id }),
          ),
      ],
      [
        "POST targets",
        () => (u) =>
          send(targetsRoute.POST, "POST", "/api/power/targets", u, {
            kind: "pve-node",
            hostId: host.id,
            feeds: [ups.id],
            feedPolicy: "any",
          }),
      ],
    ];
    for (const user of [viewer, operator]) {
      for (const [label, change] of changes) {
        const response = await change()(user);
        expect(response.status, `${user.user.role} ${label}`).toBe(403);
        expect(((await response.json()) as ErrorBody).error).toMatch(/admin role/);
      }
    }
    expect(await configurationCounts()).toEqual(before);
  });

  it("an admin adds a NUT UPS with a password: 201, and the password is in no answer and sealed in the database", async () => {
    const created = await send(
      upsRoute.POST,
      "POST",
      "/api/power/ups",
      admin,
      nutUps("secret-ups"),
    );
    expect(created.status).toBe(201);
    const text = await created.text();
    expect(text).not.toContain(NUT_PASSWORD);
    const { ups } = JSON.parse(text) as { ups: { id: string; hasSecret: boolean; source: object } };
    expect(ups.hasSecret).toBe(true);
    expect(ups.source).toEqual({
      type: "nut",
      host: "127.0.0.1",
      port: nutServer.nut!.port,
      upsName: "lab",
      username: "monuser",
    });

    const answers = await Promise.all([
      get(upsRoute.GET, "/api/power/ups", viewer),
      get(overviewRoute.GET, "/api/power", viewer),
      get(planRoute.GET, "/api/power/plan", viewer),
      get(eventsRoute.GET, "/api/power/events", viewer),
    ]);
    for (const answer of answers) expect(await answer.text()).not.toContain(NUT_PASSWORD);
    const { rows } = await getDb().execute<{ sealed: string }>(
      sql`select c.sealed from credentials c join ups_devices u on u.secret_credential_id = c.id where u.id = ${ups.id}`,
    );
    expect(rows[0]!.sealed).toMatch(/^v1\./);
    expect(rows[0]!.sealed).not.toContain(NUT_PASSWORD);

    // Changing something else keeps the stored password; the answer still does not carry it.
    const renamed = await send(
      upsDeviceRoute.PATCH,
      "PATCH",
      `/api/power/ups/${ups.id}`,
      admin,
      { name: "secret-ups-2", source: { ...nutUps("x").source, password: "" } },
      params({ upsId: ups.id }),
    );
    expect(renamed.status).toBe(200);
    const body = await renamed.text();
    expect(body).not.toContain(NUT_PASSWORD);
    expect((JSON.parse(body) as { ups: { hasSecret: boolean } }).ups.hasSecret).toBe(true);
  });

  it("bad input is a 400 naming the nested field (source.host, source.port, triggers.chargeBelowPercent), never a 500", async () => {
    const cases: [() => Promise<Response>, string[]][] = [
      [
        () =>
          send(upsRoute.POST, "POST", "/api/power/ups", admin, {
            name: "bad",
            source: { type: "nut", host: "", port: 99999, upsName: "lab" },
          }),
        ["source.host", "source.port"],
      ],
      [
        () =>
          send(upsRoute.POST, "POST", "/api/power/ups", admin, {
            name: "bad",
            source: {
              type: "snmp",
              version: "3",
              host: "10.0.0.1",
              user: "u",
              authProtocol: "sha",
              authKey: "short",
              privProtocol: "aes",
              privKey: "short",
            },
          }),
        ["source.authKey", "source.privKey"],
      ],
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            triggers: { chargeBelowPercent: 500 },
          }),
        ["triggers.chargeBelowPercent"],
      ],
      [() => send(modeRoute.POST, "POST", "/api/power/mode", admin, { mode: "on" }), ["mode"]],
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            powerBack: { mainsStableMinutes: 0, minChargePercent: "50; drop table runs" },
          }),
        ["powerBack.mainsStableMinutes", "powerBack.minChargePercent"],
      ],
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            powerBack: { minChargePercent: 101, extra: 1 },
          }),
        ["powerBack.minChargePercent"],
      ],
      // Early shedding: the threshold, the tag (Proxmox's pve-tag format) and the list.
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            shed: { enabled: "yes", afterMinutes: 0, tag: "<script>" },
          }),
        ["shed.enabled", "shed.afterMinutes", "shed.tag"],
      ],
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            shed: { afterMinutes: "2; drop table runs", tag: "-shed", guests: "pve1/105" },
          }),
        ["shed.afterMinutes", "shed.tag", "shed.guests"],
      ],
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            shed: {
              afterMinutes: 2.5,
              tag: "x".repeat(65),
              guests: [{ node: "pve1; rm -rf /", vmid: 99 }],
            },
          }),
        ["shed.afterMinutes", "shed.tag", "shed.guests.0.node", "shed.guests.0.vmid"],
      ],
      [
        () =>
          send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
            shed: { afterMinutes: 100_000, guests: [{ node: "pve1", vmid: 105, extra: 1 }] },
          }),
        ["shed.afterMinutes", "shed.guests.0"],
      ],
    ];
    for (const [call, fields] of cases) {
      const response = await call();
      expect(response.status).toBe(400);
      expect(Object.keys(((await response.json()) as ErrorBody).fieldErrors)).toEqual(
        expect.arrayContaining(fields),
      );
    }
    for (const body of ["[1,2]", "null", '"x"', "{nope"]) {
      const response = await send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, body);
      expect(response.status, body).toBe(400);
    }
  });

  it("power-back settings are saved and read back; Bring back now is for admins, takes only {}, and without an outage is a 409 that says so", async () => {
    const saved = await send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
      powerBack: { mainsStableMinutes: 7 },
    });
    expect(saved.status).toBe(200);
    const read = (await (await get(settingsRoute.GET, "/api/power/settings", viewer)).json()) as {
      powerBack: unknown;
    };
    expect(read.powerBack).toEqual({ mainsStableMinutes: 7, minChargePercent: 50 });
    // Early shedding: off by default; saved and read back.
    expect((read as { shed?: unknown }).shed).toEqual({
      enabled: false,
      afterMinutes: 2,
      tag: "shed",
      guests: [],
    });
    const shed = await send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
      shed: {
        enabled: true,
        afterMinutes: 3,
        tag: "Low-Prio",
        guests: [{ node: "pve1", vmid: 105 }],
      },
    });
    expect(shed.status).toBe(200);
    const readShed = (await (
      await get(settingsRoute.GET, "/api/power/settings", viewer)
    ).json()) as {
      shed: unknown;
    };
    expect(readShed.shed).toEqual({
      enabled: true,
      afterMinutes: 3,
      tag: "Low-Prio",
      guests: [{ node: "pve1", vmid: 105 }],
    });

    for (const body of ['{"runId":"x"}', "[1]", "null", "{nope", '"x"']) {
      const response = await send(
        powerBackRoute.POST,
        "POST",
        "/api/power/power-back",
        admin,
        body,
      );
      expect(response.status, body).toBe(400);
    }
    const refused = await send(powerBackRoute.POST, "POST", "/api/power/power-back", operator, {});
    expect(refused.status).toBe(403);
    const none = await send(powerBackRoute.POST, "POST", "/api/power/power-back", admin, {});
    expect(none.status).toBe(409);
    expect(((await none.json()) as ErrorBody).error).toMatch(/No outage to come back from/);
  });

  it("arming confirms the targets the plan listed (audited); a list that no longer matches is 409 and stays dry-run; disarming", async () => {
    const ups = await seedUps(getDb(), { name: "arming-ups" });
    const host = await seedHost(getDb(), { name: "arming-host" });
    const created = await send(targetsRoute.POST, "POST", "/api/power/targets", admin, {
      kind: "pve-node",
      hostId: host.id,
      feeds: [ups.id],
      feedPolicy: "any",
    });
    expect(created.status).toBe(201);
    const listed = await planTargets(viewer);
    expect(listed.map((t) => t.name)).toContain("arming-host");

    const stale = await send(modeRoute.POST, "POST", "/api/power/mode", admin, {
      mode: "armed",
      confirmedTargetIds: listed.slice(1).map((t) => t.id),
    });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as ErrorBody).error).toMatch(/plan changed/);
    expect(
      ((await (await get(modeRoute.GET, "/api/power/mode", viewer)).json()) as { mode: string })
        .mode,
    ).toBe("dry-run");

    const armed = await send(modeRoute.POST, "POST", "/api/power/mode", admin, {
      mode: "armed",
      confirmedTargetIds: listed.map((t) => t.id),
    });
    expect(armed.status).toBe(200);
    expect(await (await get(modeRoute.GET, "/api/power/mode", viewer)).json()).toMatchObject({
      mode: "armed",
      armedBy: admin.user.name,
    });
    const { rows } = await getDb().execute<{ action: string; outcome: string }>(
      sql`select action, outcome from audit_log where actor_name = ${admin.user.name} and action like 'power.%arm' order by id`,
    );
    expect(rows.map((r) => `${r.action} ${r.outcome}`)).toEqual([
      "power.arm failure",
      "power.arm success",
    ]);

    const disarmed = await send(modeRoute.POST, "POST", "/api/power/mode", admin, {
      mode: "dry-run",
    });
    expect(disarmed.status).toBe(200);
    expect(
      ((await (await get(modeRoute.GET, "/api/power/mode", viewer)).json()) as { mode: string })
        .mode,
    ).toBe("dry-run");
  });

  it("while armed, a change that alters the plan answers 409 with what it changes and saves nothing; confirmed, it is saved and says what it changed", async () => {
    const ups = await seedUps(getDb(), { name: "guard-ups" });
    const host = await seedHost(getDb(), { name: "guard-host" });
    const created = await send(targetsRoute.POST, "POST", "/api/power/targets", admin, {
      kind: "pve-node",
      hostId: host.id,
      feeds: [ups.id],
      feedPolicy: "any",
    });
    const createdBody = (await created.json()) as { target: { id: string } };
    expect(created.status, JSON.stringify(createdBody)).toBe(201);
    const { target } = createdBody;
    const armed = await send(modeRoute.POST, "POST", "/api/power/mode", admin, {
      mode: "armed",
      confirmedTargetIds: (await planTargets(admin)).map((t) => t.id),
    });
    expect(armed.status).toBe(200);

    const change = { stage: 5, confirmPlanChange: false };
    const unconfirmed = await send(
      targetRoute.PATCH,
      "PATCH",
      `/api/power/targets/${target.id}`,
      admin,
      change,
      params({ targetId: target.id }),
    );
    expect(unconfirmed.status).toBe(409);
    const refused = (await unconfirmed.json()) as ErrorBody & {
      planChange: { changed: boolean; lines: string[] };
    };
    expect(refused.planChange.changed).toBe(true);
    expect(refused.planChange.lines).toContain("guard-host: stage 0 ⇒ 5");
    const stageNow = async () =>
      (
        await getDb().execute<{ stage: number }>(
          sql`select stage from power_targets where id = ${target.id}`,
        )
      ).rows[0]!.stage;
    expect(await stageNow()).toBe(0);

    // A change that leaves the plan as it is needs no confirmation.
    const harmless = await send(settingsRoute.PATCH, "PATCH", "/api/power/settings", admin, {
      pollIntervalMs: 1000,
    });
    expect(harmless.status).toBe(200);

    const confirmed = await send(
      targetRoute.PATCH,
      "PATCH",
      `/api/power/targets/${target.id}`,
      admin,
      { ...change, confirmPlanChange: true },
      params({ targetId: target.id }),
    );
    expect(confirmed.status).toBe(200);
    expect(
      ((await confirmed.json()) as { planChange: { changed: boolean } }).planChange.changed,
    ).toBe(true);
    expect(await stageNow()).toBe(5);
    await send(modeRoute.POST, "POST", "/api/power/mode", admin, { mode: "dry-run" });
  });

  it("a backup server target: its token secret is sealed and in no answer; a malformed id is a 400, an unknown one a 404", async () => {
    const ups = await seedUps(getDb());
    const secret = "pbs-token-secret-do-not-show";
    const created = await send(targetsRoute.POST, "POST", "/api/power/targets", admin, {
      kind: "pbs",
      name: "pbs-api",
      address: "127.0.0.1",
      tokenId: "root@pam!power",
      tokenSecret: secret,
      certSha256: Array.from({ length: 32 }, () => "AB").join(":"),
      feeds: [ups.id],
      feedPolicy: "any",
    });
    const createdText = await created.text();
    expect(created.status, createdText).toBe(201);
    expect(createdText).not.toContain(secret);
    for (const answer of [
      await get(targetsRoute.GET, "/api/power/targets", viewer),
      await get(planRoute.GET, "/api/power/plan", viewer),
    ]) {
      expect(await answer.text()).not.toContain(secret);
    }
    const malformed = await send(
      targetRoute.PATCH,
      "PATCH",
      "/api/power/targets/x",
      admin,
      { stage: 1 },
      params({ targetId: "x" }),
    );
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as ErrorBody).fieldErrors.targetId).toBeDefined();
    const unknown = crypto.randomUUID();
    const missing = await send(
      targetRoute.DELETE,
      "DELETE",
      `/api/power/targets/${unknown}`,
      admin,
      undefined,
      params({ targetId: unknown }),
    );
    expect(missing.status).toBe(404);
  });

  it("operators acknowledge an alarm (the first acknowledgement stays), viewers get 403; only admins release a latch, 409 when nothing is latched", async () => {
    const ups = await seedUps(getDb());
    const eventId = await seedEvent(getDb(), {
      severity: "critical",
      kind: "ups.unreachable",
      upsId: ups.id,
    });
    const acknowledge = (user: TestUser, id: string = String(eventId)) =>
      send(
        acknowledgeRoute.POST,
        "POST",
        `/api/power/events/${id}/acknowledge`,
        user,
        undefined,
        params({ eventId: id }),
      );

    expect((await acknowledge(viewer)).status).toBe(403);
    const first = await acknowledge(operator);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ eventId, acknowledgedBy: operator.user.name });
    const again = await acknowledge(admin);
    expect(await again.json()).toMatchObject({ acknowledgedBy: operator.user.name });
    expect((await acknowledge(operator, "abc")).status).toBe(400);
    expect((await acknowledge(operator, "999999999")).status).toBe(404);
    const listed = await get(
      eventsRoute.GET,
      `/api/power/events?upsId=${ups.id}&unacknowledged=true`,
      viewer,
    );
    expect(((await listed.json()) as { events: unknown[] }).events).toEqual([]);

    const release = (user: TestUser) =>
      send(
        releaseLatchRoute.POST,
        "POST",
        `/api/power/ups/${ups.id}/release-latch`,
        user,
        undefined,
        params({ upsId: ups.id }),
      );
    expect((await release(operator)).status).toBe(403);
    const nothing = await release(admin);
    expect(nothing.status).toBe(409);
    expect(((await nothing.json()) as ErrorBody).error).toMatch(/no latched trigger/);
    await seedMonitorState(getDb(), ups.id, {
      reachable: true,
      latchedTrigger: "low_battery",
      latchedAt: new Date(),
      latchedReason: "the UPS reports low battery (LB)",
    });
    expect((await release(admin)).status).toBe(200);
    const overview = (await (await get(overviewRoute.GET, "/api/power", viewer)).json()) as {
      ups: { id: string; latch: unknown }[];
    };
    expect(overview.ups.find((u) => u.id === ups.id)?.latch).toBeNull();
  });
});
