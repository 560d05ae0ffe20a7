import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentials, hosts, notificationDeliveries, powerEvents } from "@/lib/db/schema";
import { definePipeline, poll, type Step } from "@/lib/pipeline/step";
import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import { createTarget } from "@/lib/notify/targets";
import { abortRun } from "@/lib/runs/abort-run";
import { startRun } from "@/lib/runs/start-run";
import { seal } from "@/lib/secrets/seal";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { registerTestDatabase } from "@/test/db";
import {
  addUps,
  ADMIN,
  persistReading,
  powerTestPipelines,
  protectHost,
  shutdownInput,
} from "@/test/fixtures/power";
import { runRow, settled } from "@/test/runs";
import { waitFor } from "@/test/worker-process";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { powerShutdownPipeline } from "../shutdown-pipeline/pipeline";
import { planShutdown } from "../shutdown-pipeline/plan-shutdown";
import type { PowerServices } from "./services";
import { SHUTDOWN_CANCELLED } from "./shut-down-targets";
import { POWER_MONITOR_ACTOR, startShutdownRun } from "../shutdown-pipeline/start-shutdown-run";

/**
 * Every end of a power-shutdown run that is not a success notifies — through the real worker,
 * its engine and the notification queue: a step that throws until its attempts are used up, a
 * step past its maxDuration and a step's own fail are a critical `shutdown.run_failed`; an
 * operator's abort is its own `shutdown.aborted`; a run cancelled because the mains came back
 * stays the `shutdown.cancelled` it already was, without a second message.
 *
 * The engine's failures need a step that misbehaves: test pipelines made of the power pipeline
 * (its services and its onFailed) with such a step after the real PlanShutdown.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let receiver: WebhookReceiver;
let upsId: string;
let targetId: string;

function powerTestPipeline(name: string, step: Step<PowerServices>) {
  return definePipeline<PowerServices>({
    ...powerShutdownPipeline,
    name,
    steps: [planShutdown, step],
  });
}

const throwing = powerTestPipeline("test-power-throws", {
  name: "ShutDownTargets",
  maxDuration: () => 60,
  async visit() {
    throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
  },
});

const overrunning = powerTestPipeline("test-power-overruns", {
  name: "ShutDownTargets",
  maxDuration: () => 1,
  visit: (ctx) =>
    new Promise((_, reject) =>
      ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error)),
    ),
});

const waiting = powerTestPipeline("test-power-waits", {
  name: "ShutDownTargets",
  maxDuration: () => 3600,
  visit: async () => poll(3600, "waiting for the operator"),
});

const pipelines = {
  ...powerTestPipelines,
  [throwing.name]: throwing,
  [overrunning.name]: overrunning,
  [waiting.name]: waiting,
};

beforeAll(async () => {
  const { db, url } = database;
  receiver = await startWebhookReceiver();
  worker = await startWorker({
    connectionString: url,
    pipelines,
    concurrency: 2,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
    engine: { maxTransientErrors: 3, backoffSeconds: () => 0 },
    notify: { retryBaseMs: 200, timeoutMs: 2000 },
  });
  upsId = await addUps(db, "ups-test"); // as shutdownInput names it
  // A host as onboarding leaves it; the runs here are dry-run, nothing is sent to it.
  const [ssh] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: seal("{}") })
    .returning();
  const [token] = await db
    .insert(credentials)
    .values({ kind: "api_token", sealed: seal("unused") })
    .returning();
  const [host] = await db
    .insert(hosts)
    .values({
      name: "pve-dry",
      address: "192.0.2.10",
      sshUser: "root",
      credentialId: ssh!.id,
      nodeName: "pve-dry",
      apiCertSha256: "AB:".repeat(31) + "AB",
      apiTokenId: "clupilot@pve!console",
      apiTokenCredentialId: token!.id,
    })
    .returning();
  targetId = await protectHost(db, host!.id, { feeds: [upsId] });
  await createTarget(
    db,
    { name: "on-call", format: "json", url: receiver.url("/on-call"), minSeverity: "warning" },
    ADMIN,
  );
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
});

async function runOf(pipeline: typeof throwing) {
  const { db } = database;
  const runId = await db.transaction((tx) =>
    startRun(tx, {
      pipeline,
      hostId: null,
      actor: POWER_MONITOR_ACTOR,
      context: { input: shutdownInput(upsId, [targetId]) },
    }),
  );
  return runId;
}

const eventsOf = (runId: string) =>
  database.db
    .select()
    .from(powerEvents)
    .where(eq(powerEvents.runId, runId))
    .orderBy(asc(powerEvents.id));

/** The run's event of this kind and its delivery to the on-call webhook, once delivered. */
async function notified(runId: string, kind: string) {
  const [event] = (await eventsOf(runId)).filter((e) => e.kind === kind);
  expect(event, `a ${kind} event of run ${runId}`).toBeDefined();
  const delivery = await waitFor(
    `the ${kind} delivery`,
    async () => {
      const [row] = await database.db
        .select()
        .from(notificationDeliveries)
        .where(
          and(
            eq(notificationDeliveries.powerEventId, event!.id),
            eq(notificationDeliveries.state, "delivered"),
          ),
        );
      return row;
    },
    30_000,
  );
  const body = receiver
    .received("/on-call")
    .map((r) => JSON.parse(r.body) as { kind: string; text: string; severity: string })
    .find((b) => b.kind === kind && b.text === event!.message);
  expect(body, `the webhook received the ${kind} message`).toBeDefined();
  return { event: event!, delivery, body: body! };
}

describe("a power run that does not succeed notifies", () => {
  it("a step that throws every time: the engine fails the run, a critical shutdown.run_failed goes out", async () => {
    const runId = await runOf(throwing);
    const run = await settled(database.db, runId);
    expect(run).toMatchObject({
      status: "failed",
      failedStep: "ShutDownTargets",
      failureReason: "connect ECONNREFUSED 127.0.0.1:5432",
    });
    const { event, delivery } = await notified(runId, "shutdown.run_failed");
    expect(event).toMatchObject({ severity: "critical", upsId, runId });
    expect(event.data).toMatchObject({
      runId,
      step: "ShutDownTargets",
      reason: "connect ECONNREFUSED 127.0.0.1:5432",
      cause: "errors",
    });
    expect(event.message).toContain(`Power shutdown run ${runId} of UPS ups-test failed`);
    expect(event.message).toContain("ShutDownTargets");
    expect(event.message).toContain("connect ECONNREFUSED 127.0.0.1:5432");
    expect(event.message).toMatch(/still up.*by hand/);
    expect(delivery).toMatchObject({ kind: "shutdown.run_failed", severity: "critical" });
  });

  it("a step past its maxDuration: the same critical shutdown.run_failed, naming the time limit", async () => {
    const runId = await runOf(overrunning);
    const run = await settled(database.db, runId);
    expect(run.failureReason).toMatch(/maximum duration of 1 s/);
    const { event } = await notified(runId, "shutdown.run_failed");
    expect(event.severity).toBe("critical");
    expect(event.data).toMatchObject({ step: "ShutDownTargets", cause: "deadline" });
    expect(event.message).toMatch(/maximum duration of 1 s/);
  });

  it("a step's own fail (the real pipeline: its due target was removed) is a shutdown.run_failed too", async () => {
    const { db } = database;
    const runId = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(upsId, ["00000000-0000-4000-8000-000000000000"])),
    );
    const run = await settled(db, runId);
    expect(run).toMatchObject({ status: "failed", failedStep: "PlanShutdown" });
    const { event } = await notified(runId, "shutdown.run_failed");
    expect(event.data).toMatchObject({ step: "PlanShutdown", cause: "step" });
  });

  it("an operator's abort is reported as its own kind, naming who aborted", async () => {
    const runId = await runOf(waiting);
    await waitFor(
      "the run to wait",
      async () => (await runRow(database.db, runId)).phase === "waiting for the operator",
      30_000,
    );
    await abortRun(database.db, { runId, actor: "alice" });
    const run = await settled(database.db, runId);
    expect(run.failureReason).toBe(ABORT_REASON);
    const { event } = await notified(runId, "shutdown.aborted");
    expect(event.severity).toBe("warning");
    expect(event.message).toContain("alice");
    expect((await eventsOf(runId)).map((e) => e.kind)).not.toContain("shutdown.run_failed");
  });

  it("mains back before anything was sent: the run's own shutdown.cancelled, and no second message", async () => {
    const { db } = database;
    await persistReading(db, upsId, false);
    const runId = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(upsId, [targetId])),
    );
    const run = await settled(db, runId);
    expect(run.failureReason).toBe(SHUTDOWN_CANCELLED);
    await notified(runId, "shutdown.cancelled");
    expect((await eventsOf(runId)).map((e) => e.kind)).toEqual(["shutdown.cancelled"]);
  });

  it("a run that succeeds reports no failure", async () => {
    const { db } = database;
    await persistReading(db, upsId, true);
    const runId = await db.transaction((tx) =>
      startShutdownRun(tx, shutdownInput(upsId, [targetId])),
    );
    expect((await settled(db, runId)).status).toBe("succeeded");
    const kinds = (await eventsOf(runId)).map((e) => e.kind);
    expect(kinds).toContain("shutdown.would_send");
    expect(kinds.filter((k) => k.startsWith("shutdown.run_") || k === "shutdown.aborted")).toEqual(
      [],
    );
  });
});
