import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import {
  auditLog,
  credentials,
  hosts,
  powerEvents,
  upsDevices,
  upsMonitorState,
} from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { deleteHost } from "@/lib/hosts/delete-host";
import { seal } from "@/lib/secrets/seal";
import { registerTestDatabase } from "@/test/db";
import { addUps, ADMIN, persistReading, protectHost } from "@/test/fixtures/power";
import { acknowledgePowerEvent } from "./acknowledge-power-event";
import { planPreview } from "../shutdown-pipeline/plan-preview";
import { readPowerSettings } from "../config/power-settings-store";
import { createPowerTarget, listPowerTargets } from "./power-targets";
import { releaseLatch } from "./release-latch";
import { setPowerMode } from "./set-power-mode";
import { updatePowerSettings } from "./update-power-settings";
import { createUpsDevice, deleteUpsDevice, listUpsDevices, updateUpsDevice } from "./ups-devices";
import { readSecret } from "../config/ups-secret-store";

const database = registerTestDatabase();
let counter = 0;
/** These UPSes have no server behind them: saved without trying the login (see ups-login-check). */
const UNTRIED = { checkSource: async () => {} };

/** A host as onboarding leaves it: API token (sealed) and certificate pin recorded. */
async function apiHost(name = `node${++counter}`, extra: Partial<typeof hosts.$inferInsert> = {}) {
  const { db } = database;
  const [ssh] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: seal(JSON.stringify({ password: "x" })) })
    .returning();
  const [token] = await db
    .insert(credentials)
    .values({ kind: "api_token", sealed: seal("token-secret-uuid") })
    .returning();
  const [host] = await db
    .insert(hosts)
    .values({
      name,
      address: "10.0.0.5",
      sshUser: "root",
      credentialId: ssh!.id,
      nodeName: name,
      apiPort: 8006,
      apiCertSha256: "AB:".repeat(31) + "AB",
      apiTokenId: "clupilot@pve!console",
      apiTokenCredentialId: token!.id,
      ...extra,
    })
    .returning();
  return host!;
}

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe("UPS devices", () => {
  it("seal their secrets, never show them, keep them when a change leaves them out", async () => {
    const { db } = database;
    const created = await createUpsDevice(
      db,
      {
        name: "rack-1",
        source: {
          type: "nut",
          host: "10.0.0.9",
          upsName: "ups1",
          username: "mon",
          password: "hunter22",
        },
      },
      ADMIN,
      UNTRIED,
    );
    expect(created).toMatchObject({ sourceLabel: "NUT ups1@10.0.0.9:3493", hasSecret: true });
    expect(JSON.stringify(created)).not.toContain("hunter22");
    expect(JSON.stringify(await listUpsDevices(db))).not.toContain("hunter22");
    const [row] = await db.select().from(upsDevices).where(eq(upsDevices.id, created.id));
    const [sealed] = await db
      .select()
      .from(credentials)
      .where(eq(credentials.id, row!.secretCredentialId!));
    expect(sealed!.kind).toBe("ups_secret");
    expect(sealed!.sealed).not.toContain("hunter22");
    expect(JSON.stringify(row!.source)).not.toContain("hunter22");

    await updateUpsDevice(
      db,
      {
        id: created.id,
        source: { type: "nut", host: "10.0.0.10", upsName: "ups1", username: "mon" },
      },
      ADMIN,
      UNTRIED,
    );
    const [kept] = await db.select().from(upsDevices).where(eq(upsDevices.id, created.id));
    expect(kept!.source).toMatchObject({ host: "10.0.0.10" });
    expect(await readSecret(db, kept!.secretCredentialId)).toEqual({ password: "hunter22" });

    await updateUpsDevice(
      db,
      {
        id: created.id,
        source: { type: "snmp", version: "2c", host: "10.0.0.10", community: "pub1ic" },
      },
      ADMIN,
      UNTRIED,
    );
    const [switched] = await db.select().from(upsDevices).where(eq(upsDevices.id, created.id));
    expect(await readSecret(db, switched!.secretCredentialId)).toEqual({ community: "pub1ic" });
    // The old secret is gone with the change.
    expect(
      await db.select().from(credentials).where(eq(credentials.id, row!.secretCredentialId!)),
    ).toEqual([]);
  });

  it("refuses a source whose secret is missing after a change of type", async () => {
    const { db } = database;
    const ups = await createUpsDevice(
      db,
      { name: "rack-2", source: { type: "nut", host: "10.0.0.9", upsName: "ups1" } },
      ADMIN,
      UNTRIED,
    );
    const error = await refusal(
      updateUpsDevice(
        db,
        { id: ups.id, source: { type: "snmp", version: "2c", host: "10.0.0.9" } },
        ADMIN,
        UNTRIED,
      ),
    );
    expect(error.code).toBe("invalid_input");
  });

  it("cannot be removed while it still feeds a target", async () => {
    const { db } = database;
    const upsId = await addUps(db, "rack-3");
    const host = await apiHost("feeder");
    await protectHost(db, host.id, { feeds: [upsId] });
    const error = await refusal(deleteUpsDevice(db, { id: upsId }, ADMIN));
    expect(error.message).toMatch(/UPS rack-3 still feeds feeder/);
    const audit = await db.select().from(auditLog).where(eq(auditLog.action, "power.ups_delete"));
    expect(audit.map((a) => a.outcome)).toEqual(["failure"]);
  });
});

describe("targets", () => {
  it("allow one host marked as running the console, and no retired host", async () => {
    const { db } = database;
    const upsId = await addUps(db);
    await protectHost(db, (await apiHost()).id, { feeds: [upsId], runsConsole: true });
    const second = await refusal(
      protectHost(db, (await apiHost()).id, { feeds: [upsId], runsConsole: true }),
    );
    expect(second.message).toMatch(/already marked as the host the console runs on/);
    const retired = await apiHost("gone", { retiredAt: new Date() });
    expect((await refusal(protectHost(db, retired.id, { feeds: [upsId] }))).message).toMatch(
      /retired/,
    );
  });

  it("end with their host: deleting a retired protected host removes its protection", async () => {
    const { db } = database;
    const upsId = await addUps(db);
    const host = await apiHost("doomed");
    const targetId = await protectHost(db, host.id, { feeds: [upsId] });
    await db.update(hosts).set({ retiredAt: new Date() }).where(eq(hosts.id, host.id));
    await deleteHost(db, { hostId: host.id, actor: "test" });
    expect((await listPowerTargets(db)).some((t) => t.id === targetId)).toBe(false);
  });

  it("a PBS target stores its token's secret sealed and shows the exact request", async () => {
    const { db } = database;
    const upsId = await addUps(db);
    const target = await createPowerTarget(
      db,
      {
        kind: "pbs",
        name: "backup-1",
        address: "10.0.0.20",
        tokenId: "clupilot@pbs!power",
        tokenSecret: "pbs-secret-value",
        certSha256: "cd:".repeat(31) + "cd",
        feeds: [upsId],
        feedPolicy: "any",
      },
      ADMIN,
    );
    expect(target.request).toBe(
      "POST https://10.0.0.20:8007/api2/json/nodes/localhost/status command=shutdown",
    );
    expect(JSON.stringify(await listPowerTargets(db))).not.toContain("pbs-secret-value");
  });
});

describe("arming and the plan preview", () => {
  it("previews per UPS: order with the console's host last, the held-back all-policy host, budget against reserve", async () => {
    const { db } = database;
    const a = await addUps(db, "feed-a");
    const b = await addUps(db, "feed-b");
    await protectHost(db, (await apiHost("first")).id, { feeds: [a], stage: 0 });
    await protectHost(db, (await apiHost("second")).id, { feeds: [a], stage: 2 });
    await protectHost(db, (await apiHost("dual")).id, {
      feeds: [a, b],
      feedPolicy: "all",
      stage: 1,
    });
    await persistReading(db, a, true);
    await updatePowerSettings(
      db,
      { shutdown: { callTimeoutSeconds: 10, targetDownSeconds: 180 } },
      ADMIN,
    );

    const preview = await planPreview(db);
    const group = preview.groups.find((g) => g.ups.name === "feed-a")!;
    expect(group.targets.map((t) => [t.name, t.group])).toEqual([
      ["first", 0],
      ["second", 1],
    ]);
    expect(group.heldBack).toEqual([
      { id: expect.any(String), name: "dual", waitingFor: ["feed-b"] },
    ]);
    expect(group.budgetSeconds).toBe(2 * 10 + 180);
    // The fixture's reading: 80 %, 1200 s — 15 s per %. The default rows leave, when they fire:
    // runtime < 5 min → 300 s; charge < 30 % → 450 s; 10 min on battery → 1500 − 600 = 900 s.
    // The first that fires leaves the most: the plan must fit in 900 s, not today's 1200 s.
    expect(group.reserveSeconds).toBe(900);
    expect(group.summary).toBe(
      "budget 3 min 20 s, runtime at the trigger 15 min 0 s (10 min 0 s on battery, of a full battery's 25 min 0 s at this load): OK",
    );
    expect(group.targets[0]!.request?.line).toBe(
      "POST https://10.0.0.5:8006/api2/json/nodes/first/status command=shutdown",
    );
    const noReading = preview.groups.find((g) => g.ups.name === "feed-b")!;
    expect(noReading.summary).toBe("nothing would be shut down");

    await updatePowerSettings(db, { shutdown: { targetDownSeconds: 1800 } }, ADMIN);
    const short = (await planPreview(db)).groups.find((g) => g.ups.name === "feed-a")!;
    expect(short.verdict).toBe("short");
    expect(short.summary).toMatch(/: TOO SHORT by \d+ min$/);
  });

  it("says what arming also lets happen: the UPS output cycle per UPS, early shedding as set", async () => {
    const { db } = database;
    const before = await planPreview(db);
    expect(before.groups.find((g) => g.ups.name === "feed-a")!.ups.outputCycle).toBe(false);
    expect(before.shed).toEqual({ enabled: false, afterMinutes: 2, tag: "shed", listed: 0 });

    const feedA = before.groups.find((g) => g.ups.name === "feed-a")!.ups.id;
    await db.update(upsDevices).set({ outputCycle: true }).where(eq(upsDevices.id, feedA));
    await updatePowerSettings(
      db,
      { shed: { enabled: true, afterMinutes: 3, guests: [{ node: "first", vmid: 105 }] } },
      ADMIN,
    );
    const after = await planPreview(db);
    const cycling = (name: string) =>
      after.groups.find((g) => g.ups.name === name)!.ups.outputCycle;
    expect([cycling("feed-a"), cycling("feed-b")]).toEqual([true, false]);
    expect(after.shed).toEqual({ enabled: true, afterMinutes: 3, tag: "shed", listed: 1 });

    await db.update(upsDevices).set({ outputCycle: false }).where(eq(upsDevices.id, feedA));
    await updatePowerSettings(db, { shed: { enabled: false, guests: [] } }, ADMIN);
  });

  it("arms only against the plan the admin confirmed, audited, and shows what changed since", async () => {
    const { db } = database;
    const ids = (await listPowerTargets(db)).map((t) => t.id);
    const stale = await refusal(
      setPowerMode(db, { mode: "armed", confirmedTargetIds: ids.slice(1) }, ADMIN),
    );
    expect(stale.code).toBe("conflict");
    expect(stale.message).toMatch(/The plan changed since the confirmation was shown/);
    expect((await readPowerSettings(db)).mode).toBe("dry-run");

    await setPowerMode(db, { mode: "armed", confirmedTargetIds: ids }, ADMIN);
    const settings = await readPowerSettings(db);
    expect(settings).toMatchObject({ mode: "armed", armedBy: ADMIN.name });
    const audit = await db.select().from(auditLog).where(eq(auditLog.action, "power.arm"));
    expect(audit.map((a) => a.outcome)).toEqual(["failure", "success"]);
    const [armedEvent] = await db
      .select()
      .from(powerEvents)
      .where(eq(powerEvents.kind, "mode.armed"));
    expect(armedEvent!.severity).toBe("warning");

    const upsId = await addUps(db);
    await protectHost(db, (await apiHost("late")).id, { feeds: [upsId] });
    expect((await planPreview(db)).changedSinceArmed).toEqual({
      added: ["late"],
      removed: [],
      changed: [],
    });

    await setPowerMode(db, { mode: "dry-run" }, ADMIN);
    expect((await readPowerSettings(db)).mode).toBe("dry-run");
    expect((await planPreview(db)).changedSinceArmed).toBeNull();
  });
});

describe("latches and events", () => {
  it("an admin releases a latch (evented, audited), on battery only when confirmed; with none latched it is refused", async () => {
    const { db } = database;
    const upsId = await addUps(db);
    await persistReading(db, upsId, true);
    await db
      .update(upsMonitorState)
      .set({
        latchedTrigger: "low_battery",
        latchedAt: new Date(),
        latchedReason: "the UPS reports low battery",
      })
      .where(eq(upsMonitorState.upsId, upsId));
    // Still on battery: released only when the admin confirms it may fire again.
    expect((await refusal(releaseLatch(db, { upsId }, ADMIN))).message).toMatch(/on battery/);
    await releaseLatch(db, { upsId, confirmDuringOutage: true }, ADMIN);
    const [state] = await db.select().from(upsMonitorState).where(eq(upsMonitorState.upsId, upsId));
    expect(state!.latchedAt).toBeNull();
    const [event] = await db
      .select()
      .from(powerEvents)
      .where(eq(powerEvents.kind, "latch.released"));
    expect(event!.message).toMatch(/latch released by test-admin during an outage/);
    const nothing = await refusal(releaseLatch(db, { upsId, confirmDuringOutage: true }, ADMIN));
    expect(nothing.code).toBe("conflict");
    expect(nothing.message).toMatch(/no latched trigger/);
  });

  it("acknowledging keeps the first acknowledgement", async () => {
    const { db } = database;
    const [event] = await db.select().from(powerEvents).limit(1);
    const first = await acknowledgePowerEvent(
      db,
      { eventId: event!.id },
      { userId: null, name: "op1" },
    );
    const second = await acknowledgePowerEvent(
      db,
      { eventId: event!.id },
      { userId: null, name: "op2" },
    );
    expect(second).toEqual(first);
    expect(first.acknowledgedBy).toBe("op1");
    expect((await refusal(acknowledgePowerEvent(db, { eventId: 999_999 }, ADMIN))).code).toBe(
      "not_found",
    );
  });
});
