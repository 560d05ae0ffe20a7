import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, runAbortRequests, runs } from "@/lib/db/schema";
import { latestRun, lockHost, retiredHostError } from "@/lib/host-access/host-guards";
import { AppError } from "@/lib/errors";
import { appendRunLog } from "@/lib/logs/append";
import { formatLogTime } from "@/lib/logs/text";
import { scheduleTick } from "@/lib/pipeline/schedule";
import { RUN_RETRIED } from "./attempts";
import { notifyLive } from "@/lib/live/notify";

/**
 * Re-enters a failed run at the step that failed, as a first visit of a new chain: the step's
 * maxDuration and transient-error budget start over, and the step sees `visit === 1`. The log
 * gets a line of its own between the attempts, filed under `Retry by <who>`, so the failed
 * attempt and the next one are separate sections (a section is a run of one step's lines).
 *
 * Refused while another run of the same host is running (an onboarding started again, a
 * decommission): two runs working one host at once race each other's apt jobs, token and
 * template build. The host row is locked first, as every operation that starts a run does.
 */
export async function retryRun(
  db: Database,
  input: { runId: string; actor: string },
): Promise<void> {
  await db.transaction(async (tx) => {
    const [owner] = await tx
      .select({ hostId: runs.hostId })
      .from(runs)
      .where(eq(runs.id, input.runId));
    const host = owner?.hostId ? await lockHost(tx, owner.hostId) : null;
    const [run] = await tx.select().from(runs).where(eq(runs.id, input.runId)).for("no key update");
    if (!run) throw new AppError("not_found", `Run ${input.runId} does not exist.`);
    if (run.status !== "failed") {
      throw new AppError(
        "conflict",
        `Only a failed run can be retried; this run is ${run.status}.`,
      );
    }
    if (host) {
      if (host.retiredAt) throw retiredHostError(host.name);
      const latest = await latestRun(tx, host.id);
      if (latest && latest.id !== run.id && latest.status === "running") {
        throw new AppError(
          "conflict",
          `${host.name} has a newer run working on it (${latest.pipeline}, at ${latest.currentStep}); wait for it to end, or abort it, before retrying this one.`,
        );
      }
    }
    const now = new Date();
    const step = run.failedStep ?? run.currentStep;
    await tx
      .update(runs)
      .set({
        status: "running",
        currentStep: step,
        failureReason: null,
        failedStep: null,
        phase: null,
        stepVisit: 0,
        stepStartedAt: now,
        errorCount: 0,
        finishedAt: null,
        nextTickAt: now,
        updatedAt: now,
      })
      .where(eq(runs.id, run.id));
    await tx.delete(runAbortRequests).where(eq(runAbortRequests.runId, run.id));
    await tx.insert(events).values({
      runId: run.id,
      hostId: run.hostId,
      kind: RUN_RETRIED,
      actor: input.actor,
      message: `retry of ${step} (failed: ${run.failureReason ?? "unknown"})`,
      data: { step },
    });
    await appendRunLog(tx, run.id, [
      {
        step: `Retry by ${input.actor}`,
        kind: "run",
        text: `↻ ${step} retried by ${input.actor} at ${formatLogTime(now)}Z; a new attempt starts`,
        at: now,
      },
    ]);
    await scheduleTick(tx, run.id, now);
    await notifyLive(tx, { type: "run", runId: run.id, hostId: run.hostId });
  });
}
