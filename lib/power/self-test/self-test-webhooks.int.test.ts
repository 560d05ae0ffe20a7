import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTarget, updateTarget } from "@/lib/notify/targets";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { registerTestDatabase } from "@/test/db";
import { ADMIN } from "@/test/fixtures/power";
import { readSelfTestOverview } from "./latest-self-test";
import { runSelfTest } from "./run-self-test";

const database = registerTestDatabase();
let receiver: WebhookReceiver;

let hookId: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  ({ id: hookId } = await createTarget(
    database.db,
    { name: "ops-hook", format: "json", url: receiver.url("/hook"), minSeverity: "info" },
    ADMIN,
  ));
});

afterAll(async () => {
  await receiver?.close();
});

const webhookCheck = async (occasion: "button" | "schedule") =>
  (await runSelfTest(database.db, { occasion, timeoutMs: 2000 })).checks.find((c) =>
    c.key.startsWith("webhook:"),
  );

describe("the self-test's webhook check", () => {
  it("sends each webhook a real test message when a person asks, and says whether it was taken", async () => {
    expect(await webhookCheck("button")).toMatchObject({
      verdict: "ok",
      reason: expect.stringContaining("took a test message (HTTP 200)"),
    });
    expect(receiver.received("/hook")).toHaveLength(1);

    receiver.failNext(1, "/hook");
    const refused = await webhookCheck("button");
    expect(refused?.verdict).toBe("failed");
    expect(refused?.reason).toContain("did not take a test message");
    expect(refused?.reason).toContain("500");
  });

  it("sends nothing on the hourly run: no test message in the channel every hour", async () => {
    const before = receiver.received("/hook").length;
    expect(await webhookCheck("schedule")).toBeUndefined();
    expect(receiver.received("/hook")).toHaveLength(before);
  });
});

describe("the self-test card's webhook results", () => {
  it("keep showing what the last run by hand found once a later run tested no webhook", async () => {
    receiver.failNext(1, "/hook");
    const byHand = await runSelfTest(database.db, { occasion: "button", timeoutMs: 2000 });
    // The latest run is the one by hand: its own checks say it all.
    expect((await readSelfTestOverview(database.db)).lastWebhookTest).toBeNull();

    const hourly = await runSelfTest(database.db, { occasion: "schedule", timeoutMs: 2000 });
    const overview = await readSelfTestOverview(database.db);
    expect(overview.latest?.id).toBe(hourly.id);
    expect(overview.latest?.checks.some((c) => c.key.startsWith("webhook:"))).toBe(false);
    expect(overview.lastWebhookTest).toEqual({
      finishedAt: byHand.finishedAt.toISOString(),
      requestedBy: null,
      checks: [
        expect.objectContaining({
          title: "ops-hook: the webhook delivers",
          verdict: "failed",
          reason: expect.stringContaining("did not take a test message") as string,
        }),
      ],
    });
    // Only the webhook checks come along: the run's other checks are the hourly run's to say.
    expect(overview.lastWebhookTest?.checks).toHaveLength(
      byHand.checks.filter((c) => c.key.startsWith("webhook:")).length,
    );

    // A target switched off since: its old verdict is news of nothing.
    await runSelfTest(database.db, { occasion: "schedule", timeoutMs: 2000 });
    expect((await readSelfTestOverview(database.db)).lastWebhookTest).not.toBeNull();
    await updateTarget(database.db, { id: hookId, enabled: false }, ADMIN);
    expect((await readSelfTestOverview(database.db)).lastWebhookTest).toBeNull();
    await updateTarget(database.db, { id: hookId, enabled: true }, ADMIN);

    await runSelfTest(database.db, { occasion: "button", timeoutMs: 2000 });
    expect((await readSelfTestOverview(database.db)).lastWebhookTest).toBeNull();
  });
});
