import { and, eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { notificationDeliveries, powerEvents } from "@/lib/db/schema";
import { createTarget } from "@/lib/notify/targets";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { ADMIN } from "@/test/fixtures/power";
import {
  isRunning,
  READY_LINE,
  startSupervisedConsole,
  type SupervisedConsole,
} from "@/test/supervised-console";
import { waitFor } from "@/test/worker-process";
import { CRASH_LOOP_KINDS } from "./crash-loop-events";

/**
 * A crash loop of npm start's worker and of its embedded database, told to webhook targets: the
 * real supervisor, worker and PostgreSQL (test/supervised-console.ts) with two restarts within
 * 40 s as a crash loop, and two targets on the lab receiver — one for everything, one for
 * critical events only. The supervisor records the loop in npm start's process; a worker sends
 * it: the worker's own loop waits in the queue while no worker runs, the database's is recorded
 * once the database is back.
 */

const CRASH_LOOP = { restarts: 2, windowMs: 40_000 };
// The second restart of a loop waits 6 s: long enough to see that nothing is sent meanwhile.
const BACKOFF = { initialMs: 3_000, maxMs: 6_000, stableMs: 60_000 };

let harness: SupervisedConsole;
let receiver: WebhookReceiver;
let handle: ReturnType<typeof createDb>;
let db: Database;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  harness = await startSupervisedConsole({ backoff: BACKOFF, crashLoop: CRASH_LOOP });
  await harness.waitForLine(READY_LINE);
  handle = createDb(harness.databaseUrl(), 2);
  handle.pool.on("error", () => {}); // the database is killed below
  db = handle.db;
  for (const [name, minSeverity] of [
    ["all", "info"],
    ["critical", "critical"],
  ] as const) {
    await createTarget(
      db,
      { name: `crash-${name}`, format: "json", url: receiver.url(`/${name}`), minSeverity },
      ADMIN,
    );
  }
}, 120_000);

afterAll(async () => {
  await handle?.pool.end();
  await harness?.close();
  await receiver?.close();
});

type Message = { kind: string; severity: string; title: string; text: string; at: string };
const messages = (path: string): Message[] =>
  receiver.received(path).map((r) => JSON.parse(r.body) as Message);

const eventsOf = (kind: string) =>
  db
    .select()
    .from(powerEvents)
    .where(eq(powerEvents.kind, kind))
    .catch(() => []); // while the database is away

const workerPids = () => harness.lines(READY_LINE).map((m) => Number(m[1]));

describe("a crash loop of npm start's processes, told to webhook targets", () => {
  it("the worker's own loop: recorded at once, sent once a worker runs again, to every target that wants it; its end too, to the target that wants info", async () => {
    for (const count of [1, 2]) {
      const pid = workerPids()[count - 1]!;
      process.kill(pid, "SIGKILL");
      if (count === 1) await harness.waitForLine(READY_LINE, 2);
    }
    await harness.waitForLine(/^\[clupilot\] CRASH LOOP: the worker restarted 2 times/);

    // No worker runs (the next start is 6 s away): the loop is recorded, its deliveries wait.
    const [began] = await waitFor(
      "the crash loop recorded",
      async () => {
        const rows = await eventsOf(CRASH_LOOP_KINDS.began);
        return rows.length > 0 ? rows : null;
      },
      10_000,
      100,
    );
    expect(workerPids().filter(isRunning)).toEqual([]);
    expect(began).toMatchObject({ severity: "critical", data: { process: "worker", restarts: 2 } });
    expect(began!.message).toMatch(
      /^The worker restarted 2 times within 40 s \(last: killed by SIGKILL\)\. It keeps being restarted, at most 6 s apart; npm start's log says why it ends\.$/,
    );
    const waiting = await db
      .select({ state: notificationDeliveries.state })
      .from(notificationDeliveries)
      .where(eq(notificationDeliveries.powerEventId, began!.id));
    expect(waiting.map((d) => d.state)).toEqual(["pending", "pending"]);
    expect(receiver.received()).toEqual([]);

    // A worker runs again: it sends what waited.
    await harness.waitForLine(READY_LINE, 3);
    await receiver.waitFor(1, { path: "/critical", timeoutMs: 30_000 });
    await receiver.waitFor(1, { path: "/all", timeoutMs: 30_000 });
    for (const path of ["/all", "/critical"]) {
      expect(messages(path)).toEqual([
        expect.objectContaining({
          kind: CRASH_LOOP_KINDS.began,
          severity: "critical",
          title: "Crash loop: worker",
          text: began!.message,
          at: began!.at.toISOString(),
        }),
      ]);
    }

    // Over once the window passes without another restart: info, to the target that wants it.
    await harness.waitForLine(/^\[clupilot\] the worker's crash loop is over/, 1, 60_000);
    await receiver.waitFor(2, { path: "/all", timeoutMs: 30_000 });
    expect(messages("/all")[1]).toMatchObject({
      kind: CRASH_LOOP_KINDS.over,
      severity: "info",
      title: "Crash loop over: worker",
      text: "The worker's crash loop is over: fewer than 2 restarts within the last 40 s.",
    });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(messages("/critical")).toHaveLength(1);
  }, 180_000);

  it("the database's loop: noticed while it is down, recorded with that moment once it is back, and sent", async () => {
    const before = receiver.received("/critical").length;
    for (const count of [1, 2]) {
      const postmaster = harness.postmasterPid();
      expect(postmaster).not.toBeNull();
      process.kill(postmaster!, "SIGKILL");
      await harness.waitForLine(/^\[clupilot\] database ended \(/, count);
      if (count === 1) {
        await waitFor("the database back", async () => {
          const pid = harness.postmasterPid();
          return pid !== null && pid !== postmaster ? pid : null;
        });
        await harness.waitForLine(
          /^\[clupilot\] recorded 1 restart\(s\) for the console's pages now/,
        );
      }
    }
    await harness.waitForLine(/^\[clupilot\] CRASH LOOP: the database restarted 2 times/);

    await receiver.waitFor(before + 1, { path: "/critical", timeoutMs: 60_000 });
    const [began] = await eventsOf(CRASH_LOOP_KINDS.began).then((rows) =>
      rows.filter((r) => (r.data as { process?: string } | null)?.process === "database"),
    );
    expect(began).toMatchObject({ severity: "critical", data: { process: "database" } });
    // Noticed before the database it is about was up again, recorded after.
    const [{ startedAt }] = (
      await handle.pool.query<{ startedAt: Date }>(
        `select pg_postmaster_start_time() as "startedAt"`,
      )
    ).rows as [{ startedAt: Date }];
    expect(began!.at.getTime()).toBeLessThan(startedAt.getTime());
    expect(messages("/critical").at(-1)).toMatchObject({
      kind: CRASH_LOOP_KINDS.began,
      title: "Crash loop: database",
      at: began!.at.toISOString(),
    });
    // Both targets' deliveries: the /critical message arriving says nothing of the other
    // target's, which may still be on its way (its job runs beside, or retries after the
    // database's restarts).
    const deliveries = await waitFor(
      "both targets' deliveries delivered",
      async () => {
        const rows = await db
          .select({ state: notificationDeliveries.state })
          .from(notificationDeliveries)
          .where(
            and(
              eq(notificationDeliveries.powerEventId, began!.id),
              inArray(notificationDeliveries.state, ["delivered"]),
            ),
          );
        return rows.length === 2 ? rows : null;
      },
      60_000,
    );
    expect(deliveries).toHaveLength(2);
  }, 180_000);
});
