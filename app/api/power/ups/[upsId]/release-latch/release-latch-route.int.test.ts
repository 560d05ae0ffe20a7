import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { createPowerTarget } from "@/lib/power/operations/power-targets";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { armingTargets } from "@/lib/power/queries/arming-targets";
import { createTestUser, type TestUser } from "@/test/auth";
import { seedHost, seedMonitorState, seedUps } from "@/test/power-seed";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as route from "./route";

/*
 * Issue 29, item 15: releasing a latch while the UPS is still on battery let the trigger fire
 * again at the next reading and shut the UPS's targets down a second time — accepted without a
 * word. Now such a release needs `confirmDuringOutage: true` and is audited as one.
 */

// The route handler uses the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let admin: TestUser;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
});

type Answer = { status: number; body: Record<string, unknown> };

async function release(upsId: string, body?: string): Promise<Answer> {
  const response = await route.POST(
    new Request(`http://test/api/power/ups/${upsId}/release-latch`, {
      method: "POST",
      headers: admin.authHeaders({ "content-type": "application/json" }),
      ...(body === undefined ? {} : { body }),
    }),
    params({ upsId }),
  );
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const LOW_BATTERY = {
  onBattery: true,
  lowBattery: true,
  chargePercent: 12,
  runtimeSeconds: 140,
  reportedSecondsOnBattery: null,
  rawStatus: "OB LB",
};
const ON_MAINS = { ...LOW_BATTERY, onBattery: false, lowBattery: false, rawStatus: "OL CHRG" };

/** A latched UPS feeding one host, its last reading `reading`. */
async function latchedUps(reading: typeof LOW_BATTERY, reachable = true) {
  const ups = await seedUps(getDb());
  const host = await seedHost(getDb());
  await createPowerTarget(
    getDb(),
    { kind: "pve-node", hostId: host.id, feeds: [ups.id], feedPolicy: "any" },
    { userId: null, name: "setup" },
  );
  await seedMonitorState(getDb(), ups.id, {
    reachable,
    lastReading: { at: new Date().toISOString(), ...reading },
    onBatterySince: reading.onBattery ? new Date(Date.now() - 600_000) : null,
    latchedTrigger: "low_battery",
    latchedAt: new Date(Date.now() - 60_000),
    latchedReason: "the UPS reports low battery (LB)",
    ...(reachable ? {} : { alarmSince: new Date(), alarmReason: "upsd refused the connection" }),
  });
  return { ups, host };
}

const latchHolds = async (upsId: string) =>
  (
    await getDb().execute<{ held: boolean }>(
      sql`select latched_at is not null as held from ups_monitor_state where ups_id = ${upsId}`,
    )
  ).rows[0]!.held;

const auditOf = async (upsId: string) =>
  (
    await getDb().execute<{ outcome: string; detail: Record<string, unknown> }>(
      sql`select outcome, detail from audit_log where action = 'power.latch_release' and target = ${`ups:${upsId}`} order by id`,
    )
  ).rows;

const releasedEvent = async (upsId: string) =>
  (
    await getDb().execute<{ message: string }>(
      sql`select message from power_events where kind = 'latch.released' and ups_id = ${upsId}`,
    )
  ).rows.map((r) => r.message);

describe("POST /api/power/ups/:id/release-latch during an outage", () => {
  it("on battery (OB LB) without confirmDuringOutage: 409 naming the state and what a release would do; the latch still holds; the refusal is audited", async () => {
    const { ups, host } = await latchedUps(LOW_BATTERY);
    for (const body of [undefined, "{}", JSON.stringify({ confirmDuringOutage: false })]) {
      const { status, body: answer } = await release(ups.id, body);
      expect(status, body).toBe(409);
      expect(answer.error).toBe(
        `UPS ${ups.name} is still on battery (OB LB, 12 %): releasing the latch lets the trigger fire again within seconds and start another dry-run shutdown of ${host.name} (dry-run: nothing is really shut down). Release it during the outage only if that is what you want, and confirm that you do (confirmDuringOutage: true).`,
      );
      expect(answer.fieldErrors).toMatchObject({ confirmDuringOutage: [expect.any(String)] });
    }
    expect(await latchHolds(ups.id)).toBe(true);
    expect(await releasedEvent(ups.id)).toEqual([]);
    const audit = await auditOf(ups.id);
    expect(audit.map((a) => a.outcome)).toEqual(["failure", "failure", "failure"]);
    expect(audit[0]!.detail.reason).toMatch(/still on battery \(OB LB, 12 %\)/);
  });

  it("with confirmDuringOutage: true it is released, and the audit row and the event say it was during an outage, with the reading", async () => {
    const { ups, host } = await latchedUps(LOW_BATTERY);
    // Armed, the warning names the real shutdown it lets happen again.
    await setPowerMode(
      getDb(),
      {
        mode: "armed",
        confirmedTargetIds: (await armingTargets(getDb())).map((t) => t.id),
      },
      { userId: null, name: "setup" },
    );
    try {
      const refused = await release(ups.id);
      expect(refused.body.error).toContain(
        `releasing the latch lets the trigger fire again within seconds and shut down ${host.name} again.`,
      );
      const { status, body } = await release(ups.id, JSON.stringify({ confirmDuringOutage: true }));
      expect(status).toBe(200);
      expect(body).toEqual({ upsId: ups.id, duringOutage: true });
    } finally {
      await setPowerMode(getDb(), { mode: "dry-run" }, { userId: null, name: "setup" });
    }
    expect(await latchHolds(ups.id)).toBe(false);
    const [, released] = await auditOf(ups.id);
    expect(released).toMatchObject({
      outcome: "success",
      detail: {
        duringOutage: true,
        reading: { rawStatus: "OB LB", chargePercent: 12, runtimeSeconds: 140, current: true },
        warning: expect.stringContaining(`shut down ${host.name} again`),
      },
    });
    const [message] = await releasedEvent(ups.id);
    expect(message).toMatch(
      new RegExp(
        `^${ups.name}: latch released by ${admin.user.name} during an outage \\(OB LB, 12 %\\)`,
      ),
    );
  });

  it("last seen on battery and unreachable now: still an outage, the flag is needed", async () => {
    const { ups } = await latchedUps(LOW_BATTERY, false);
    const { status, body } = await release(ups.id);
    expect(status).toBe(409);
    expect(body.error).toMatch(
      new RegExp(
        `^UPS ${ups.name} was last seen on battery \\(OB LB, 12 %\\) and gives no reliable reading now: `,
      ),
    );
    expect(await latchHolds(ups.id)).toBe(true);
  });

  it("on mains: released without the flag (no body, or {}), audited as not during an outage", async () => {
    for (const body of [undefined, "{}"]) {
      const { ups } = await latchedUps(ON_MAINS);
      const answer = await release(ups.id, body);
      expect(answer, body).toEqual({ status: 200, body: { upsId: ups.id, duringOutage: false } });
      expect(await latchHolds(ups.id)).toBe(false);
      expect(await auditOf(ups.id)).toEqual([
        { outcome: "success", detail: { duringOutage: false } },
      ]);
    }
  });

  it("a flag that is not true or false, an unknown field or a body that is not an object is a 400 with field errors; nothing is released", async () => {
    const { ups } = await latchedUps(LOW_BATTERY);
    const cases: [string, string | null][] = [
      [JSON.stringify({ confirmDuringOutage: "yes" }), "confirmDuringOutage"],
      [JSON.stringify({ confirmDuringOutages: true }), null],
      ["[true]", null],
      ["{nope", null],
    ];
    for (const [body, field] of cases) {
      const { status, body: answer } = await release(ups.id, body);
      expect(status, body).toBe(400);
      if (field) expect(Object.keys(answer.fieldErrors as object), body).toContain(field);
    }
    expect(await latchHolds(ups.id)).toBe(true);
  });
});
