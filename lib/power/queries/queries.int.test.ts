import { describe, expect, it } from "vitest";
import { powerSettings, powerShutdownCalls, runs } from "@/lib/db/schema";
import { DEFAULT_POWER_SETTINGS } from "@/lib/power/config/settings";
import { registerTestDatabase } from "@/test/db";
import {
  seedEvent,
  seedHost,
  seedMonitorState,
  seedPbsTarget,
  seedPveTarget,
  seedReadings,
  seedUps,
  seedVerification,
} from "@/test/power-seed";
import { getPowerOverview } from "./power-overview";
import { listPowerEvents, ZPowerEventFilter } from "./power-events";
import { readPowerMode } from "./power-settings";
import { latestShutdownRun } from "./shutdown-run";
import { listTargetProtection } from "./target-protection";
import { listUpsReadings, MAX_POINTS, ZUpsReadingsQuery } from "./ups-readings";

const database = registerTestDatabase();

const reading = (
  at: string,
  onBattery: boolean,
  chargePercent: number,
  runtimeSeconds: number,
) => ({
  at,
  onBattery,
  lowBattery: false,
  chargePercent,
  runtimeSeconds,
  reportedSecondsOnBattery: null,
  rawStatus: onBattery ? "OB" : "OL",
});

describe("power page queries", () => {
  it("a fresh installation is in dry-run and has nothing to show", async () => {
    expect(await readPowerMode(database.db)).toEqual({
      mode: "dry-run",
      armedAt: null,
      armedBy: null,
    });
    const overview = await getPowerOverview(database.db);
    expect(overview.mode.mode).toBe("dry-run");
    expect(overview.ups).toEqual([]);
    expect(await latestShutdownRun(database.db)).toBeNull();
  });

  it("UPS cards: never polled reads 'not asked'; on battery shows the console's own outage clock; in alarm keeps its last reliable reading beside the alarm", async () => {
    const { db } = database;
    const fresh = await seedUps(db, { name: "a-fresh" });
    const onBattery = await seedUps(db, {
      name: "b-battery",
      triggerOverrides: { chargeBelowPercent: 50 },
    });
    const lost = await seedUps(db, { name: "c-lost" });
    // The UPS's own counter says 900 s; the console saw the outage begin 42 s ago.
    await seedMonitorState(db, onBattery.id, {
      reachable: true,
      lastReading: {
        ...reading("2026-12-01T10:00:42Z", true, 71, 660),
        reportedSecondsOnBattery: 900,
      },
      lastReadingAt: new Date("2026-12-01T10:00:42Z"),
      onBatterySince: new Date("2026-12-01T10:00:00Z"),
      leaseOwner: "worker-1",
      leaseUntil: new Date("2026-12-01T10:00:47Z"),
    });
    await seedMonitorState(db, lost.id, {
      reachable: false,
      lastReading: reading("2026-12-01T09:59:00Z", false, 100, 3600),
      lastReadingAt: new Date("2026-12-01T09:59:00Z"),
      onBatterySince: new Date("2026-11-30T08:00:00Z"),
      alarmSince: new Date("2026-12-01T09:59:05Z"),
      alarmReason: "upsd at 127.0.0.1:3493 answered ERR DATA-STALE",
    });

    const { ups } = await getPowerOverview(db);
    const card = (id: string) => ups.find((u) => u.id === id)!;
    expect(ups.map((u) => u.name).slice(0, 3)).toEqual(["a-fresh", "b-battery", "c-lost"]);

    expect(card(fresh.id)).toMatchObject({
      condition: "not-asked",
      reachable: null,
      lastReading: null,
      onBatterySince: null,
      watchedUntil: null,
      source: "NUT lab@127.0.0.1:3493",
    });
    expect(card(onBattery.id)).toMatchObject({
      condition: "on-battery",
      onBatterySince: "2026-12-01T10:00:00.000Z",
      lastReading: { chargePercent: 71, runtimeSeconds: 660, rawStatus: "OB" },
      watchedUntil: "2026-12-01T10:00:47.000Z",
      triggers: { ...DEFAULT_POWER_SETTINGS.triggers, chargeBelowPercent: 50 },
    });
    // On mains when last heard of: no outage clock, whatever an old column says.
    expect(card(lost.id)).toMatchObject({
      condition: "no-reading",
      reachable: false,
      onBatterySince: null,
      alarm: { since: "2026-12-01T09:59:05.000Z", reason: expect.stringContaining("DATA-STALE") },
      lastReading: { at: "2026-12-01T09:59:00Z", onBattery: false },
    });
  });

  it("UPS cards show a latched trigger with what fired it, and the mode as armed with who and when", async () => {
    const { db } = database;
    const ups = await seedUps(db);
    await seedMonitorState(db, ups.id, {
      reachable: true,
      lastReading: { ...reading("2026-12-01T10:05:00Z", true, 20, 240), lowBattery: true },
      onBatterySince: new Date("2026-12-01T10:00:00Z"),
      latchedTrigger: "low_battery",
      latchedAt: new Date("2026-12-01T10:05:00Z"),
      latchedReason: "the UPS reports low battery (LB)",
    });
    await db.insert(powerSettings).values({
      mode: "armed",
      armedAt: new Date("2026-12-01T09:00:00Z"),
      armedBy: "alice",
      triggers: DEFAULT_POWER_SETTINGS.triggers,
      shutdown: DEFAULT_POWER_SETTINGS.shutdown,
    });
    const overview = await getPowerOverview(db);
    expect(overview.mode).toEqual({
      mode: "armed",
      armedAt: "2026-12-01T09:00:00.000Z",
      armedBy: "alice",
    });
    expect(overview.ups.find((u) => u.id === ups.id)).toMatchObject({
      condition: "low-battery",
      latch: { trigger: "low_battery", reason: "the UPS reports low battery (LB)" },
    });
    await db.delete(powerSettings);
  });

  it("readings: one UPS's window, oldest first, the last 6 hours unless asked otherwise", async () => {
    const { db } = database;
    const ups = await seedUps(db);
    const other = await seedUps(db);
    const now = new Date("2026-12-01T12:00:00Z");
    await seedReadings(db, ups.id, [
      {
        at: new Date("2026-12-01T05:00:00Z"),
        reachable: true,
        onBattery: false,
        chargePercent: 100,
      },
      {
        at: new Date("2026-12-01T11:00:01Z"),
        reachable: true,
        onBattery: true,
        chargePercent: 90,
        runtimeSeconds: 900,
      },
      {
        at: new Date("2026-12-01T11:00:00Z"),
        reachable: true,
        onBattery: false,
        chargePercent: 100,
        runtimeSeconds: 1200,
      },
      { at: new Date("2026-12-01T11:00:02Z"), reachable: false },
    ]);
    await seedReadings(db, other.id, [{ at: new Date("2026-12-01T11:00:00Z"), reachable: true }]);

    const series = await listUpsReadings(db, ZUpsReadingsQuery.parse({ upsId: ups.id }), now);
    expect(series.from).toBe("2026-12-01T06:00:00.000Z");
    expect(series.bucketSeconds).toBeNull();
    expect(series.points).toEqual([
      {
        at: "2026-12-01T11:00:00.000Z",
        reachable: true,
        onBattery: false,
        lowBattery: null,
        chargePercent: 100,
        runtimeSeconds: 1200,
      },
      {
        at: "2026-12-01T11:00:01.000Z",
        reachable: true,
        onBattery: true,
        lowBattery: null,
        chargePercent: 90,
        runtimeSeconds: 900,
      },
      {
        at: "2026-12-01T11:00:02.000Z",
        reachable: false,
        onBattery: null,
        lowBattery: null,
        chargePercent: null,
        runtimeSeconds: null,
      },
    ]);

    const early = await listUpsReadings(
      db,
      ZUpsReadingsQuery.parse({ upsId: ups.id, from: "2026-12-01T04:00", to: "2026-12-01T06:00" }),
    );
    expect(early.points.map((p) => p.at)).toEqual(["2026-12-01T05:00:00.000Z"]);
  });

  it("readings: a long outage at 1 Hz is thinned to at most MAX_POINTS buckets that keep the lowest charge and runtime", async () => {
    const { db } = database;
    const ups = await seedUps(db);
    const start = Date.parse("2026-12-01T06:00:00Z");
    const rows = Array.from({ length: MAX_POINTS * 2 + 10 }, (_, i) => ({
      at: new Date(start + i * 1000),
      reachable: true,
      onBattery: i >= 100,
      lowBattery: false,
      chargePercent: i === 4321 ? 3 : 80,
      runtimeSeconds: 1000 - (i % 7),
    }));
    for (let i = 0; i < rows.length; i += 1000)
      await seedReadings(db, ups.id, rows.slice(i, i + 1000));
    const series = await listUpsReadings(
      db,
      ZUpsReadingsQuery.parse({
        upsId: ups.id,
        from: "2026-12-01T06:00:00Z",
        to: "2026-12-01T08:00:00Z",
      }),
    );
    expect(series.bucketSeconds).toBeGreaterThan(1);
    expect(series.points.length).toBeLessThanOrEqual(MAX_POINTS);
    expect(Math.min(...series.points.map((p) => p.chargePercent ?? 100))).toBe(3);
    expect(series.points.every((p) => p.runtimeSeconds === null || p.runtimeSeconds <= 1000)).toBe(
      true,
    );
    expect(series.points.at(-1)!.onBattery).toBe(true);
    expect(series.points[0]!.onBattery).toBe(false);
  });

  it("readings: refuses a reversed or week-plus window and a malformed UPS id with field errors", () => {
    const reversed = ZUpsReadingsQuery.safeParse({
      upsId: crypto.randomUUID(),
      from: "2026-12-02T00:00:00Z",
      to: "2026-12-01T00:00:00Z",
    });
    expect(reversed.error?.issues.map((i) => i.path.join("."))).toEqual(["to"]);
    const long = ZUpsReadingsQuery.safeParse({
      upsId: crypto.randomUUID(),
      from: "2026-11-01T00:00:00Z",
      to: "2026-12-01T00:00:00Z",
    });
    expect(long.error?.issues.map((i) => i.path.join("."))).toEqual(["from"]);
    expect(ZUpsReadingsQuery.safeParse({ upsId: "ups1" }).error?.issues[0]?.path).toEqual([
      "upsId",
    ]);
  });

  it("events: newest first, 'warning' means warning or worse, a kind group matches its kinds, unacknowledged hides what was acknowledged, and the cursor pages without gaps", async () => {
    const { db } = database;
    const ups = await seedUps(db, { name: "events-ups" });
    const ids = {
      info: await seedEvent(db, { severity: "info", kind: "ups.mains_back", upsId: ups.id }),
      warning: await seedEvent(db, { severity: "warning", kind: "ups.on_battery", upsId: ups.id }),
      acked: await seedEvent(db, {
        severity: "critical",
        kind: "trigger.fired",
        upsId: ups.id,
        acknowledgedAt: new Date(),
        acknowledgedBy: "op",
      }),
      critical: await seedEvent(db, { severity: "critical", kind: "shutdown.failed" }),
      other: await seedEvent(db, { severity: "info", kind: "ups_x.y", upsId: ups.id }),
    };
    const list = async (input: Record<string, string>) =>
      (await listPowerEvents(db, ZPowerEventFilter.parse(input))).events.map((e) => e.id);

    expect(await list({ upsId: ups.id })).toEqual([ids.other, ids.acked, ids.warning, ids.info]);
    expect(await list({ severity: "warning" })).toEqual(
      expect.arrayContaining([ids.critical, ids.acked, ids.warning]),
    );
    expect(await list({ severity: "warning" })).not.toContain(ids.info);
    expect(await list({ kind: "ups", upsId: ups.id })).toEqual([ids.warning, ids.info]);
    expect(await list({ kind: "ups.on_battery" })).toEqual([ids.warning]);
    expect(await list({ unacknowledged: "true", upsId: ups.id })).toEqual([ids.warning]);

    const first = await listPowerEvents(db, ZPowerEventFilter.parse({ upsId: ups.id, limit: "2" }));
    expect(first.events.map((e) => e.id)).toEqual([ids.other, ids.acked]);
    expect(first.events[1]).toMatchObject({
      ups: { id: ups.id, name: "events-ups" },
      acknowledged: { by: "op" },
    });
    // An event recorded meanwhile does not shift the next page.
    await seedEvent(db, { upsId: ups.id });
    const second = await listPowerEvents(
      db,
      ZPowerEventFilter.parse({ upsId: ups.id, limit: "2", cursor: first.nextCursor! }),
    );
    expect(second.events.map((e) => e.id)).toEqual([ids.warning, ids.info]);
    expect(second.nextCursor).toBeNull();
  });

  it("events: refuses an unknown severity, a kind that is not one, and a damaged cursor with field errors", () => {
    const result = ZPowerEventFilter.safeParse({
      severity: "loud",
      kind: "'; drop",
      cursor: "abc",
    });
    expect(result.error?.issues.map((i) => i.path[0]).sort()).toEqual([
      "cursor",
      "kind",
      "severity",
    ]);
  });

  it("protection: feeds, policy, stage and the console's host; the token answer rests on VerifyProxmoxApi, a newer refused call, or says it was not checked", async () => {
    const { db } = database;
    const a = await seedUps(db, { name: "prot-a" });
    const b = await seedUps(db, { name: "prot-b" });
    const verified = await seedHost(db, { name: "prot-verified" });
    const lacking = await seedHost(db, { name: "prot-lacking" });
    const refused = await seedHost(db, { name: "prot-refused" });
    const bare = await seedHost(db, { name: "prot-bare", token: false });
    const unchecked = await seedHost(db, { name: "prot-unchecked" });
    const t0 = new Date("2026-12-01T08:00:00Z");
    await seedVerification(
      db,
      verified.id,
      "fail",
      "API unreachable",
      new Date(t0.getTime() - 1000),
    );
    await seedVerification(db, verified.id, "advance", "Proxmox VE 9.1 answers", t0);
    await seedVerification(
      db,
      lacking.id,
      "fail",
      "the API token clupilot@pve!console lacks Sys.PowerMgmt on /nodes/prot-lacking (power: …)",
      t0,
    );
    await seedVerification(db, refused.id, "advance", "ok", t0);

    const ids = {
      verified: await seedPveTarget(db, verified.id, [a.id, b.id], { feedPolicy: "all", stage: 1 }),
      lacking: await seedPveTarget(db, lacking.id, [a.id]),
      refused: await seedPveTarget(db, refused.id, [a.id]),
      bare: await seedPveTarget(db, bare.id, [b.id], { runsConsole: true, stage: 2 }),
      unchecked: await seedPveTarget(db, unchecked.id, []),
      pbs: await seedPbsTarget(db, [a.id], { name: "prot-pbs" }),
    };
    const [run] = await db
      .insert(runs)
      .values({ pipeline: "power-shutdown", currentStep: "ShutDownTargets" })
      .returning({ id: runs.id });
    await db.insert(powerShutdownCalls).values([
      {
        runId: run!.id,
        targetId: ids.refused,
        dueSince: t0,
        state: "failed",
        request: "POST https://127.0.0.1:8006/api2/json/nodes/prot-refused/status command=shutdown",
        detail: "HTTP 403: Permission check failed (/nodes/prot-refused, Sys.PowerMgmt)",
        startedAt: new Date(t0.getTime() + 60_000),
        finishedAt: new Date(t0.getTime() + 61_000),
      },
      // Dry-run proves nothing about the token.
      { runId: run!.id, targetId: ids.pbs, dueSince: t0, state: "would_send", request: "POST …" },
    ]);

    const rows = await listTargetProtection(db);
    const row = (id: string) => rows.find((r) => r.id === id)!;
    expect(row(ids.verified)).toMatchObject({
      name: "prot-verified",
      kind: "pve-node",
      feedPolicy: "all",
      stage: 1,
      feeds: [{ upsName: "prot-a" }, { upsName: "prot-b" }],
      request: "POST https://127.0.0.1:8006/api2/json/nodes/prot-verified/status command=shutdown",
      token: { answer: "yes", asOf: t0.toISOString() },
    });
    expect(row(ids.lacking).token).toMatchObject({
      answer: "no",
      reason: expect.stringContaining("lacks Sys.PowerMgmt"),
    });
    expect(row(ids.refused).token).toMatchObject({
      answer: "no",
      reason: expect.stringContaining("403"),
    });
    expect(row(ids.bare)).toMatchObject({
      runsConsole: true,
      request: null,
      token: { answer: "no", reason: expect.stringContaining("finish its onboarding") },
    });
    expect(row(ids.unchecked)).toMatchObject({ feeds: [], token: { answer: "unknown" } });
    expect(row(ids.pbs)).toMatchObject({
      kind: "pbs",
      name: "prot-pbs",
      address: "127.0.0.1",
      port: 8007,
      hostId: null,
      token: { answer: "unknown" },
    });
    // Configured order: stage first.
    expect(rows.map((r) => r.stage)).toEqual([...rows.map((r) => r.stage)].sort((x, y) => x - y));
    // Nothing secret in what the page receives.
    expect(JSON.stringify(rows)).not.toMatch(/token-secret|pbs-token-secret|sealed|v1\./);

    const latest = await latestShutdownRun(db);
    expect(latest?.run.id).toBe(run!.id);
    expect(latest?.calls.map((c) => [c.targetName, c.state])).toEqual([
      ["prot-refused", "failed"],
      ["prot-pbs", "would_send"],
    ]);
  });
});
