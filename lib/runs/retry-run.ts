import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, hosts, runAbortRequests, runs } from "@/lib/db/schema";
import { retiredHostError } from "@/lib/hosts/reonboard-host";
import { AppError } from "@/lib/errors";
import { notifyLive, scheduleTick } from "@/lib/pipeline/schedule";

/**
 * Re-enters a failed run at the step that failed, as a first visit of a new chain: the step's
 * maxDuration and transient-error budget start over, and the step sees `visit === 1`.
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
    await tx
      .update(runs)
      .set({
        status: "running",
        currentStep: run.failedStep ?? run.currentStep,
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
      kind: "run.retried",
      actor: input.actor,
      message: `retry of ${run.failedStep ?? run.currentStep} (failed: ${run.failureReason ?? "unknown"})`,
    });
    await scheduleTick(tx, run.id, now);
    await notifyLive(tx, { type: "run", runId: run.id, hostId: run.hostId });
  });
}
