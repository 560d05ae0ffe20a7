import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, hosts, runAbortRequests, runs } from "@/lib/db/schema";
import { retiredHostError } from "@/lib/hosts/reonboard-host";
import { AppError } from "@/lib/errors";
import { appendRunLog } from "@/lib/logs/append";
import { formatLogTime } from "@/lib/logs/text";
import { notifyLive, scheduleTick } from "@/lib/pipeline/schedule";
import { RUN_RETRIED } from "./attempts";

/**
 * Re-enters a failed run at the step that failed, as a first visit of a new chain: the step's
 * maxDuration and transient-error budget start over, and the step sees `visit === 1`. The log
 * gets a line of its own between the attempts, filed under `Retry by <who>`, so the failed
 * attempt and the next one are separate sections (a section is a run of one step's lines).
 */
export async function retryRun(
  db: Database,
  input: { runId: string; actor: string },
): Promise<void> {
  await db.transaction(async (tx) => {
    const [run] = await tx.select().from(runs).where(eq(runs.id, input.runId)).for("no key update");
    if (!run) throw new AppError("not_found", `Run ${input.runId} does not exist.`);
    if (run.status !== "failed") {
      throw new AppError(
        "conflict",
        `Only a failed run can be retried; this run is ${run.status}.`,
      );
    }
    if (run.hostId) {
      const [host] = await tx
        .select({ name: hosts.name, retiredAt: hosts.retiredAt })
        .from(hosts)
        .where(eq(hosts.id, run.hostId));
      if (host?.retiredAt) throw retiredHostError(host.name);
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
