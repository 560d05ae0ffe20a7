import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { events, notificationDeliveries } from "@/lib/db/schema";
import { tickRun } from "@/lib/pipeline/engine";
import { advance, definePipeline, fail, type Step } from "@/lib/pipeline/step";
import { startRun } from "@/lib/runs/start-run";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { registerTestDatabase } from "@/test/db";
import { attemptDelivery } from "./deliver";
import { RUN_NAMES } from "./onboarding-events";
import { createTarget } from "./targets";

const database = registerTestDatabase(4);
let receiver: WebhookReceiver;
let targetId: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  const target = await createTarget(
    database.db,
    { name: "onboarding", format: "text", url: receiver.url("/onboarding"), minSeverity: "info" },
    { userId: null, name: "admin-test" },
  );
  targetId = target.id;
});

afterAll(async () => {
  await receiver?.close();
});

const step = (name: string, visit: Step<object>["visit"]): Step<object> => ({
  name,
  maxDuration: () => 60,
  visit,
});

/** A run of a pipeline named like onboarding's, ticked until it ends; its deliveries. */
async function runToEnd(steps: Step<object>[]) {
  const pipeline = definePipeline<object>({
    name: RUN_NAMES.onboard,
    steps,
    services: () => ({ services: {}, dispose: async () => {} }),
  });
  const options = { db: database.db, pipelines: { [pipeline.name]: pipeline } };
  const runId = await database.db.transaction((tx) =>
    startRun(tx, { pipeline, hostId: null, actor: "test" }),
  );
  for (let i = 0; i < steps.length; i++) await tickRun(options, runId);
  return database.db
    .select({ delivery: notificationDeliveries, event: events })
    .from(notificationDeliveries)
    .innerJoin(events, eq(events.id, notificationDeliveries.runEventId))
    .where(eq(events.runId, runId));
}

describe("onboarding runs notify through the engine's one hook", () => {
  it("a failed step: one delivery with the step and its reason, its job queued, sent as text", async () => {
    const rows = await runToEnd([
      step("InstallProxmox", async () => fail("apt-get answered 100: no space left on device")),
    ]);
    expect(rows).toHaveLength(1);
    const { delivery, event } = rows[0]!;
    expect(delivery).toMatchObject({
      kind: "onboarding.step_failed",
      severity: "warning",
      targetId,
    });
    expect(event.kind).toBe("run.failed");
    const job = await database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from graphile_worker.jobs where key = ${`notify:${delivery.id}`}`,
    );
    expect(job.rows[0]!.n).toBe(1);

    expect(await attemptDelivery(database.db, delivery.id)).toEqual({
      kind: "delivered",
      attempts: 1,
    });
    const [sent] = receiver.received("/onboarding").slice(-1);
    expect(sent!.body).toBe(
      `[WARNING] Onboarding step failed\nInstallProxmox: apt-get answered 100: no space left on device\nonboarding.step_failed at ${event.at.toISOString()}\n`,
    );
  });

  it("a failed template build and a template check that found templates missing have their own kinds", async () => {
    const build = await runToEnd([
      step(RUN_NAMES.buildTemplate, async () => fail("qm importdisk failed")),
    ]);
    expect(build.map((r) => r.delivery.kind)).toEqual(["template.build_failed"]);
    const verify = await runToEnd([
      step(RUN_NAMES.verifyTemplate, async () => fail("Templates missing: 9000 (debian-13)")),
    ]);
    expect(verify.map((r) => r.delivery.kind)).toEqual(["template.missing"]);
  });

  it("a finished onboarding: one 'host active'; the steps advancing on the way notify nothing", async () => {
    const rows = await runToEnd([
      step("A", async () => advance()),
      step("B", async () => advance()),
    ]);
    expect(rows.map((r) => [r.event.kind, r.delivery.kind])).toEqual([
      ["run.succeeded", "host.active"],
    ]);
  });
});
