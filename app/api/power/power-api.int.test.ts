import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedEvent, seedMonitorState, seedReadings, seedUps } from "@/test/power-seed";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as eventsRoute from "./events/route";
import * as modeRoute from "./mode/route";
import * as readingsRoute from "./readings/route";
import * as overviewRoute from "./route";
import * as shutdownRunRoute from "./shutdown-run/route";
import * as targetsRoute from "./targets/route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let admin: TestUser;
let operator: TestUser;
let viewer: TestUser;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
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
