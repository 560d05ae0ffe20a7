import type { Transaction } from "@/lib/db/client";
import { events, powerShutdownCalls, runs } from "@/lib/db/schema";
import { notifyLive } from "@/lib/live/notify";
import { appendRunLog } from "@/lib/logs/append";
import { TICK_TASKS } from "@/lib/pipeline/schedule";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import type { ShutdownInput } from "@/lib/power/shutdown/shutdown-plan";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { POWER_MONITOR_ACTOR } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import type { OfflineRecord } from "./offline-shutdown";

/** The step an offline shutdown's log lines and verdict are filed under. */
const OFFLINE_STEP = "ShutDownTargets";

/**
 * Writes what the power monitor did without the database (./offline-shutdown.ts) as one
 * power-shutdown run, in the caller's transaction: the run (finished, its verdict), every call
 * attempt (so the monitor's coverage sees them: an accepted call or a target seen down is not
 * called again), every event (notifications go out now, dated when they happened) and the log.
 * The run's id was chosen when it began: recorded twice (a commit whose answer was lost), it is
 * recorded once. Returns false when it was already there.
 */
export async function recordOfflineShutdown(
  tx: Transaction,
  record: OfflineRecord,
): Promise<boolean> {
  const { plan, ups, latch } = record;
  const input: ShutdownInput = {
    trigger: {
      upsId: ups.id,
      upsName: ups.name,
      trigger: latch.trigger,
      reason: latch.reason,
      latchedAt: latch.at.toISOString(),
    },
    targets: plan.targets.map((t) => ({ targetId: t.id, dueSince: t.dueSince })),
    mode: plan.mode,
  };
  const finishedAt = record.finishedAt ?? new Date();
  const succeeded = record.outcome === "succeeded";
  const [run] = await tx
    .insert(runs)
    .values({
      id: record.runId,
      pipeline: POWER_SHUTDOWN,
      tickTask: TICK_TASKS.power,
      hostId: null,
      status: succeeded ? "succeeded" : "failed",
      currentStep: OFFLINE_STEP,
      context: {
        input,
        plan,
        offline: {
          why: record.why,
          startedAt: record.startedAt.toISOString(),
          finishedAt: finishedAt.toISOString(),
        },
        ...(record.outcome === "cancelled" ? { outcome: "cancelled" } : {}),
        ...(record.spared.length > 0 ? { dropped: record.spared } : {}),
      },
      stepStartedAt: record.startedAt,
      failureReason: succeeded ? null : record.failureReason,
      failedStep: succeeded ? null : OFFLINE_STEP,
      createdAt: record.startedAt,
      finishedAt,
      nextTickAt: null,
    })
    .onConflictDoNothing()
    .returning({ id: runs.id });
  if (!run) return false;
  await tx.insert(events).values([
    {
      runId: run.id,
      hostId: null,
      kind: "run.started",
      actor: POWER_MONITOR_ACTOR,
      message: `${POWER_SHUTDOWN} started without the database (${record.why}); recorded once it answered again`,
      at: record.startedAt,
    },
    {
      runId: run.id,
      hostId: null,
      kind: succeeded ? "run.succeeded" : "run.failed",
      actor: POWER_MONITOR_ACTOR,
      message: succeeded
        ? `${POWER_SHUTDOWN} finished`
        : `${OFFLINE_STEP}: ${record.failureReason}`,
      at: finishedAt,
    },
  ]);
  for (const attempt of record.attempts) {
    // Another run's accepted call of the same outage (a worker that took the UPS over in the
    // same moment the database came back) keeps its place: this one's row is left out, and
    // the log below still says what was sent.
    await tx
      .insert(powerShutdownCalls)
      .values({ runId: run.id, ...attempt })
      .onConflictDoNothing();
  }
  await recordPowerEvents(tx, record.events);
  await appendRunLog(
    tx,
    run.id,
    record.log.map((line) => ({
      step: OFFLINE_STEP,
      kind: "note" as const,
      text: line.text,
      at: line.at,
    })),
  );
  await notifyLive(tx, { type: "run", runId: run.id, hostId: null });
  return true;
}
