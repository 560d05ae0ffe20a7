import type { Database } from "@/lib/db/client";
import { events, runs } from "@/lib/db/schema";
import { scheduleTick, TICK_TASKS } from "@/lib/pipeline/schedule";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { notifyLive } from "@/lib/live/notify";

type Executor = Pick<Database, "insert" | "execute">;

/** Creates a run at the pipeline's first step and schedules its first tick in the same transaction. */
export async function startRun(
  tx: Executor,
  input: {
    pipeline: AnyPipeline;
    hostId: string | null;
    actor: string;
    context?: Record<string, unknown>;
  },
): Promise<string> {
  const firstStep = input.pipeline.steps[0];
  if (!firstStep) throw new Error(`pipeline ${input.pipeline.name} has no steps`);
  const now = new Date();
  const [run] = await tx
    .insert(runs)
    .values({
      pipeline: input.pipeline.name,
      tickTask: TICK_TASKS[input.pipeline.queue ?? "default"],
      hostId: input.hostId,
      currentStep: firstStep.name,
      context: input.context ?? {},
      stepStartedAt: now,
      nextTickAt: now,
    })
    .returning({ id: runs.id });
  if (!run) throw new Error("inserting the run returned no row");
  await tx.insert(events).values({
    runId: run.id,
    hostId: input.hostId,
    kind: "run.started",
    actor: input.actor,
    message: `${input.pipeline.name} started`,
  });
  await scheduleTick(tx, run.id, now);
  await notifyLive(tx, { type: "run", runId: run.id, hostId: input.hostId });
  return run.id;
}
