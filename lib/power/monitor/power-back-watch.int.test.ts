import { and, asc, eq, ne } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { runAbortRequests, runs } from "@/lib/db/schema";
import { bringBackNow } from "@/lib/power/operations/bring-back-now";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { POWER_BACK } from "@/lib/power/power-back-pipeline/pipeline";
import {
  OUTAGE_MAX_AGE_MS,
  outageToBringBack,
} from "@/lib/power/power-back-pipeline/start-power-back";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { DRILL_TRIGGER } from "@/lib/power/shutdown/drill-mark";
import { registerTestDatabase } from "@/test/db";
import {
  ADMIN,
  addUps,
  persistOnMains,
  persistReading,
  shutdownInput,
} from "@/test/fixtures/power";
import { watchPowerBack } from "./power-back-watch";

/**
 * The monitor's part in the way back, against the database with no worker ticking the runs it
 * starts (what a run then does is power-back.int.test.ts's): when it starts one, that it starts
 * one per outage, and that it stops a running one when mains is lost again. Its clock is the
 * caller's.
 */

const database = registerTestDatabase(4);

/** A finished shutdown run of the UPS's outage, as its frozen plan names the feeds. */
async function shutdownRun(
  db: Database,
  upsId: string,
  options: { drill?: boolean; cancelled?: boolean } = {},
): Promise<string> {
  const input = shutdownInput(upsId, [crypto.randomUUID()]);
  if (options.drill) input.trigger.trigger = DRILL_TRIGGER;
  const [row] = await db
    .insert(runs)
    .values({
      pipeline: POWER_SHUTDOWN,
      status: options.cancelled ? "failed" : "succeeded",
      currentStep: "VerifyTargetsDown",
      context: {
        input: options.drill
          ? { ...input, drill: { by: "test", live: false, startedAt: new Date().toISOString() } }
          : input,
        plan: { budgetSeconds: 120, targets: [{ feeds: [{ upsId, upsName: "ups" }] }] },
        ...(options.cancelled ? { outcome: "cancelled" } : {}),
      },
      finishedAt: new Date(),
    })
    .returning({ id: runs.id });
  return row!.id;
}

/** A way back that succeeded: the outages before it are closed (each test its own outage). */
async function closeOutage(db: Database) {
  await db.insert(runs).values({
    pipeline: POWER_BACK,
    status: "succeeded",
    currentStep: "ReportPowerBack",
    finishedAt: new Date(),
  });
}

const powerBackRuns = (db: Database) =>
  db
    .select({ id: runs.id, status: runs.status, context: runs.context })
    .from(runs)
    .where(and(eq(runs.pipeline, POWER_BACK), ne(runs.currentStep, "ReportPowerBack")))
    .orderBy(asc(runs.createdAt), asc(runs.id));

describe("the monitor and the way back", () => {
  it("a drill or a cancelled shutdown is no outage to come back from, nor one older than a week", async () => {
    const { db } = database;
    const upsId = await addUps(db);
    await shutdownRun(db, upsId, { drill: true });
    await shutdownRun(db, upsId, { cancelled: true });
    expect(await outageToBringBack(db, new Date())).toBeNull();
    const id = await shutdownRun(db, upsId);
    expect((await outageToBringBack(db, new Date()))?.shutdownRunIds).toEqual([id]);
    const later = new Date(Date.now() + OUTAGE_MAX_AGE_MS + 60_000);
    expect(await outageToBringBack(db, later)).toBeNull();
    await closeOutage(db);
  });

  it("starts one way back once the policy holds — not a moment before N minutes of mains — and never a second for the same outage; an admin can", async () => {
    const { db } = database;
    const upsId = await addUps(db, "policy-ups");
    await updatePowerSettings(db, { powerBack: { mainsStableMinutes: 2 } }, ADMIN);
    await shutdownRun(db, upsId);
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);

    await persistOnMains(db, upsId, {
      mainsMs: 119_999,
      chargePercent: 90,
      runtimeSeconds: 1800,
      rawStatus: "OL",
    });
    await watchPowerBack(db, new Date(), log);
    expect(await powerBackRuns(db)).toEqual([]);

    await persistOnMains(db, upsId, {
      mainsMs: 120_000,
      chargePercent: 90,
      runtimeSeconds: 1800,
      rawStatus: "OL",
    });
    await watchPowerBack(db, new Date(), log);
    await watchPowerBack(db, new Date(), log);
    const started = await powerBackRuns(db);
    expect(started).toHaveLength(1);
    expect(started[0]!.context.input).toMatchObject({ by: { kind: "monitor" } });
    expect(lines.filter((l) => l.includes("power-back run"))).toHaveLength(1);

    // It ended without success: the monitor does not try again for this outage.
    await db
      .update(runs)
      .set({ status: "failed", finishedAt: new Date() })
      .where(eq(runs.id, started[0]!.id));
    await watchPowerBack(db, new Date(), log);
    expect(await powerBackRuns(db)).toHaveLength(1);
    // An admin may.
    await bringBackNow(db, {}, ADMIN);
    const both = await powerBackRuns(db);
    expect(both).toHaveLength(2);
    expect(both[1]!.context.input).toMatchObject({ by: { kind: "admin", name: ADMIN.name } });
    await db
      .update(runs)
      .set({ status: "failed", finishedAt: new Date() })
      .where(eq(runs.id, both[1]!.id));
    await closeOutage(db);
  });

  it("mains lost again: the monitor stops a running way back at once, naming the UPS", async () => {
    const { db } = database;
    const upsId = await addUps(db, "again-ups");
    const [run] = await db
      .insert(runs)
      .values({
        pipeline: POWER_BACK,
        currentStep: "WaitForNodes",
        context: { plan: { feeds: [upsId] } },
      })
      .returning({ id: runs.id });
    await persistOnMains(db, upsId, {
      mainsMs: 600_000,
      chargePercent: 90,
      runtimeSeconds: 1800,
      rawStatus: "OL",
    });
    await watchPowerBack(db, new Date(), () => {});
    expect(
      await db.select().from(runAbortRequests).where(eq(runAbortRequests.runId, run!.id)),
    ).toEqual([]);

    await persistReading(db, upsId, true);
    const lines: string[] = [];
    await watchPowerBack(db, new Date(), (line) => lines.push(line));
    const [request] = await db
      .select()
      .from(runAbortRequests)
      .where(eq(runAbortRequests.runId, run!.id));
    expect(request?.requestedBy).toBe("power monitor: mains lost again on again-ups");
    expect(lines).toEqual([
      `power monitor: mains lost again on again-ups: power-back run ${run!.id} stopped`,
    ]);
  });
});
