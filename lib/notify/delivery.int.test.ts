import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLog, notificationDeliveries } from "@/lib/db/schema";
import { recordPowerEvents, type PowerEventInput } from "@/lib/power/records/power-events";
import { waitUntil } from "@/lab";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { registerTestDatabase } from "@/test/db";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { acknowledgeFailedDeliveries, failingDeliveriesSummary, targetCards } from "./deliveries";
import { createTarget, listTargets } from "./targets";
import { testTarget } from "./test-target";

const database = registerTestDatabase(6);
const ADMIN = { userId: null, name: "admin-test" };
const AUTH_VALUE = "Bearer s3cret-notify-token-Zq9";
const URL_SECRET = "T000/B000/XXXXsecretpath";
let receiver: WebhookReceiver;
let worker: WorkerHandle;
const workerLog: string[] = [];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  worker = await startWorker({
    connectionString: database.url,
    pipelines: {},
    concurrency: 2,
    pollIntervalMs: 100,
    periodicChecks: false,
    log: (line) => workerLog.push(line),
    notify: { retryBaseMs: 100, timeoutMs: 500, maxAttempts: 6 },
  });
});

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
});

let counter = 0;
async function target(overrides: Record<string, unknown> = {}) {
  const path = `/hook-${++counter}/${URL_SECRET}`;
  const created = await createTarget(
    database.db,
    {
      name: `target-${counter}`,
      format: "json",
      url: receiver.url(path),
      minSeverity: "info",
      ...overrides,
    },
    ADMIN,
  );
  return { ...created, path };
}

async function powerEvent(input: Partial<PowerEventInput> = {}) {
  const [id] = await database.db.transaction((tx) =>
    recordPowerEvents(tx, [
      {
        severity: "critical",
        kind: "ups.on_battery",
        message: "UPS lab-ups is on battery",
        ...input,
      },
    ]),
  );
  return id!;
}

async function deliveriesOf(targetId: string) {
  return database.db
    .select()
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.targetId, targetId))
    .orderBy(notificationDeliveries.id);
}

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string) {
  let last: T | undefined;
  await waitUntil(async () => ok((last = await read())), { timeoutMs: 20_000, what });
  return last as T;
}

describe("delivering a power event", () => {
  it("to a receiver answering 500 three times then 200: delivered once, the four attempts visible", async () => {
    const t = await target();
    receiver.failNext(3, t.path);
    const eventId = await powerEvent();
    const [delivery] = await until(
      () => deliveriesOf(t.id),
      (rows) => rows[0]?.state === "delivered",
      "the delivery to succeed",
    );
    expect(delivery).toMatchObject({
      powerEventId: eventId,
      attempts: 4,
      lastStatus: 200,
      lastError: null,
    });
    const got = receiver.received(t.path);
    expect(got.map((r) => r.answered)).toEqual([500, 500, 500, 200]);
    expect(JSON.parse(got[3]!.body)).toMatchObject({
      schema: "clupilot.notification/v1",
      id: `power:${eventId}`,
      kind: "ups.on_battery",
      severity: "critical",
    });
    // The failures in between were on the card; once delivered nothing is failing.
    const card = (await targetCards(database.db)).find((c) => c.target.id === t.id)!;
    expect(card.lastDelivery).toMatchObject({ state: "delivered", attempts: 4 });
    expect(card.failing).toEqual([]);
  });

  it("to a receiver that is down: the failure is on the target's card and the dashboard until acknowledged", async () => {
    const t = await target();
    await receiver.down();
    try {
      await powerEvent({ kind: "ups.low_battery", message: "UPS lab-ups: battery low" });
      const [failed] = await until(
        () => deliveriesOf(t.id),
        (rows) => rows[0]?.state === "failed",
        "the first attempt to fail",
      );
      expect(failed!.lastError).toMatch(/could not reach it \(ECONNREFUSED/);
      expect(failed!.nextAttemptAt).not.toBeNull();

      const card = (await targetCards(database.db)).find((c) => c.target.id === t.id)!;
      expect(card.failing).toHaveLength(1);
      expect(card.failing[0]).toMatchObject({ kind: "ups.low_battery", state: "failed" });
      const dashboard = await failingDeliveriesSummary(database.db);
      expect(dashboard.find((s) => s.targetId === t.id)).toMatchObject({
        targetName: t.name,
        failing: 1,
        lastError: expect.stringMatching(/ECONNREFUSED/),
      });

      const { acknowledged } = await acknowledgeFailedDeliveries(
        database.db,
        { targetId: t.id },
        ADMIN,
      );
      expect(acknowledged).toBe(1);
      expect(
        (await failingDeliveriesSummary(database.db)).find((s) => s.targetId === t.id),
      ).toBeUndefined();
      const [after] = await deliveriesOf(t.id);
      expect(after).toMatchObject({
        state: "acknowledged",
        acknowledgedBy: ADMIN.name,
        nextAttemptAt: null,
      });
    } finally {
      await receiver.up();
    }
  });

  it("acknowledged while an attempt is still sending: that attempt's failure does not bring the retries back", async () => {
    const t = await target();
    // The receiver takes each request and never answers: every attempt runs to its 500-ms timeout.
    receiver.setMode("hang", t.path);
    try {
      await powerEvent({ kind: "ups.low_battery", message: "UPS lab-ups: battery low" });
      // A later attempt in flight: the receiver holds more requests than the attempts stored.
      await until(
        () => deliveriesOf(t.id),
        (rows) =>
          rows[0]?.state === "failed" && receiver.received(t.path).length > rows[0].attempts,
        "a retry to be sending",
      );
      const { acknowledged } = await acknowledgeFailedDeliveries(
        database.db,
        { targetId: t.id },
        ADMIN,
      );
      expect(acknowledged).toBe(1);
      const sent = receiver.received(t.path).length;
      // Past the in-flight attempt's timeout and the next retry's delay, several times over.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const [after] = await deliveriesOf(t.id);
      expect(after).toMatchObject({ state: "acknowledged", nextAttemptAt: null });
      expect(receiver.received(t.path).length).toBe(sent);
    } finally {
      receiver.setMode("ok", t.path);
    }
  });

  it("to a receiver that comes back: a later attempt delivers and the failure leaves the dashboard", async () => {
    const t = await target();
    await receiver.down();
    await powerEvent({ kind: "ups.mains_back", severity: "info", message: "mains back" });
    await until(
      () => deliveriesOf(t.id),
      (rows) => rows[0]?.state === "failed",
      "a failed attempt",
    );
    expect((await failingDeliveriesSummary(database.db)).map((s) => s.targetId)).toContain(t.id);
    await receiver.up();
    const [delivered] = await until(
      () => deliveriesOf(t.id),
      (rows) => rows[0]?.state === "delivered",
      "a retry to deliver",
    );
    expect(delivered!.attempts).toBeGreaterThan(1);
    expect(receiver.received(t.path)).toHaveLength(1);
    expect((await failingDeliveriesSummary(database.db)).map((s) => s.targetId)).not.toContain(
      t.id,
    );
  });

  it("to a receiver that hangs: the attempt ends at its deadline and says so", async () => {
    const t = await target();
    receiver.setMode("hang", t.path);
    await powerEvent();
    const [failed] = await until(
      () => deliveriesOf(t.id),
      (rows) => rows[0]?.state === "failed",
      "the hanging attempt to time out",
    );
    expect(failed!.lastError).toBe("no answer within 0.5 s (timed out)");
    await acknowledgeFailedDeliveries(database.db, { targetId: t.id }, ADMIN);
  });

  it("only to targets whose minimum severity and event kinds it meets", async () => {
    const critical = await target({ minSeverity: "critical" });
    const upsOnly = await target({ eventKinds: ["ups.*"] });
    const disabled = await target({ enabled: false });
    await powerEvent({
      kind: "shutdown.sent",
      severity: "warning",
      message: "shutdown sent to pve-a",
    });
    await powerEvent({ kind: "ups.reachable", severity: "info", message: "UPS answers again" });
    await until(
      () => deliveriesOf(upsOnly.id),
      (r) => r[0]?.state === "delivered",
      "ups-only delivery",
    );
    expect((await deliveriesOf(upsOnly.id)).map((d) => d.kind)).toEqual(["ups.reachable"]);
    expect(await deliveriesOf(critical.id)).toEqual([]);
    expect(await deliveriesOf(disabled.id)).toEqual([]);
  });

  it("not at all when the event's transaction rolls back (no delivery row, no job)", async () => {
    const t = await target();
    await database.db
      .transaction(async (tx) => {
        await recordPowerEvents(tx, [
          { severity: "critical", kind: "ups.on_battery", message: "rolled back" },
        ]);
        throw new Error("roll back");
      })
      .catch(() => undefined);
    expect(await deliveriesOf(t.id)).toEqual([]);
    const orphans = await database.db.execute<{ n: number }>(sql`
      select count(*)::int as n from graphile_worker.jobs j
      where j.task_identifier = 'notify-deliver' and not exists (
        select 1 from notification_deliveries d where j.key = 'notify:' || d.id)`);
    expect(orphans.rows[0]!.n).toBe(0);
  });
});

describe("the Test button", () => {
  it("sends a real test message in the target's format and answers what the receiver said", async () => {
    const t = await target({ format: "slack" });
    const ok = await testTarget(database.db, { id: t.id }, ADMIN);
    expect(ok).toEqual({ ok: true, status: 200 });
    const [sent] = receiver.received(t.path);
    expect(JSON.parse(sent!.body).blocks[0].text.text).toBe(`Test message: ${t.name}`);

    receiver.setMode("fail", t.path);
    const refused = await testTarget(database.db, { id: t.id }, ADMIN);
    expect(refused).toEqual({
      ok: false,
      status: 500,
      error: "answered HTTP 500 Internal Server Error: lab receiver told to fail",
    });
  });
});

describe("a target's secrets", () => {
  it("reach the receiver and nothing else: not the views, deliveries, audit log or worker log", async () => {
    const t = await target({ authHeaderName: "Authorization", authHeaderValue: AUTH_VALUE });
    receiver.failNext(1, t.path);
    await powerEvent();
    await until(
      () => deliveriesOf(t.id),
      (r) => r[0]?.state === "delivered",
      "the delivery",
    );
    expect(receiver.received(t.path).map((r) => r.headers.authorization)).toEqual([
      AUTH_VALUE,
      AUTH_VALUE,
    ]);

    const seen = JSON.stringify({
      views: await listTargets(database.db),
      cards: await targetCards(database.db),
      dashboard: await failingDeliveriesSummary(database.db),
      deliveries: await database.db.select().from(notificationDeliveries),
      audit: await database.db.select().from(auditLog),
      log: workerLog,
    });
    expect(seen).not.toContain(AUTH_VALUE);
    expect(seen).not.toContain("s3cret");
    expect(seen).not.toContain(URL_SECRET);
    const view = (await listTargets(database.db)).find((v) => v.id === t.id)!;
    expect(view).toMatchObject({
      hasAuthHeader: true,
      authHeaderName: "Authorization",
      urlOrigin: receiver.url("").replace(/\/$/, ""),
    });
  });
});
