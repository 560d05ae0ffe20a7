import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, runAbortRequests, runs } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { scheduleTick } from "@/lib/pipeline/schedule";
import { notifyLive } from "@/lib/live/notify";

/**
 * Records the operator's abort and wakes the run at once. The run's own tick then lets the
 * current step clean up and ends the run as failed with "aborted by operator". This never waits
 * for a visit in progress (the request lives outside the row the tick locks).
 */
export async function abortRun(
  db: Database,
  input: { runId: string; actor: string },
): Promise<void> {
  await db.transaction(async (tx) => {
    const [run] = await tx
      .select({
        id: runs.id,
        status: runs.status,
        hostId: runs.hostId,
        currentStep: runs.currentStep,
      })
      .from(runs)
      .where(eq(runs.id, input.runId));
    if (!run) throw new AppError("not_found", `Run ${input.runId} does not exist.`);
    if (run.status !== "running") {
      throw new AppError(
        "conflict",
        `Only a running run can be aborted; this run is ${run.status}.`,
      );
    }
    const inserted = await tx
      .insert(runAbortRequests)
      .values({ runId: run.id, requestedBy: input.actor })
      .onConflictDoNothing()
      .returning({ runId: runAbortRequests.runId });
    if (inserted.length === 0) return; // already requested: one event, one wake-up
    await tx.insert(events).values({
      runId: run.id,
      hostId: run.hostId,
      kind: "run.abort_requested",
      actor: input.actor,
      message: `abort requested during ${run.currentStep}`,
    });
    await scheduleTick(tx, run.id, new Date());
    await notifyLive(tx, { type: "run", runId: run.id, hostId: run.hostId });
  });
}
