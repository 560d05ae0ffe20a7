import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTarget } from "@/lib/notify/targets";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { registerTestDatabase } from "@/test/db";
import { ADMIN } from "@/test/fixtures/power";
import { runSelfTest } from "./run-self-test";

const database = registerTestDatabase();
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  await createTarget(
    database.db,
    { name: "ops-hook", format: "json", url: receiver.url("/hook"), minSeverity: "info" },
    ADMIN,
  );
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
