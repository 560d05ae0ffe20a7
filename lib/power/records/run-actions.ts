import { and, asc, eq, isNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerRunActions } from "@/lib/db/schema";

export type PowerRunAction = typeof powerRunActions.$inferSelect;
export type ActionOutcome = NonNullable<PowerRunAction["outcome"]>;
export type ActionEnd = { outcome: ActionOutcome; detail?: string | null };

type ActionStart = {
  runId: string;
  /** A node name, or "cluster" for a call on the whole cluster. */
  lane: string;
  label: string;
  /** The exact request(s), secrets already masked. */
  request?: string | null;
};

export const CLUSTER_LANE = "cluster";
export { OUTPUT_CYCLE_LABEL } from "./output-cycle-label";

/**
 * Records an action's start, committed before the action goes out (a row left without an end
 * is one in flight or one whose worker died mid-call); `finish` records its end.
 */
export async function startAction(
  db: Pick<Database, "insert" | "update">,
  start: ActionStart,
): Promise<{ id: number; finish(end: ActionEnd): Promise<void> }> {
  // The same action left open by an earlier visit: its worker stopped before recording the
  // end (the visit's context, which held its id, was not committed). It may have been sent.
  await db
    .update(powerRunActions)
    .set({
      outcome: "unknown",
      detail:
        "an earlier attempt broke off before its end was recorded (the worker stopped); it may have been sent; tried again",
      finishedAt: new Date(),
    })
    .where(
      and(
        eq(powerRunActions.runId, start.runId),
        eq(powerRunActions.lane, start.lane),
        eq(powerRunActions.label, start.label),
        start.request
          ? eq(powerRunActions.request, start.request)
          : isNull(powerRunActions.request),
        isNull(powerRunActions.finishedAt),
      ),
    );
  const [row] = await db
    .insert(powerRunActions)
    .values({ ...start, request: start.request ?? null })
    .returning({ id: powerRunActions.id });
  const id = row!.id;
  return { id, finish: (end) => finishAction(db, id, end) };
}

export async function finishAction(
  db: Pick<Database, "update">,
  id: number,
  end: ActionEnd,
): Promise<void> {
  await db
    .update(powerRunActions)
    .set({ outcome: end.outcome, detail: end.detail ?? null, finishedAt: new Date() })
    .where(eq(powerRunActions.id, id));
}

/** Records an action that happens at once and sends nothing (dry-run's would-do). */
export async function recordInstantAction(
  db: Pick<Database, "insert">,
  start: ActionStart & ActionEnd,
): Promise<void> {
  const now = new Date();
  await db.insert(powerRunActions).values({
    runId: start.runId,
    lane: start.lane,
    label: start.label,
    request: start.request ?? null,
    outcome: start.outcome,
    detail: start.detail ?? null,
    startedAt: now,
    finishedAt: now,
  });
}

/** The run's actions in the order they started. */
export function actionsOfRun(
  db: Pick<Database, "select">,
  runId: string,
): Promise<PowerRunAction[]> {
  return db
    .select()
    .from(powerRunActions)
    .where(eq(powerRunActions.runId, runId))
    .orderBy(asc(powerRunActions.startedAt), asc(powerRunActions.id));
}

/**
 * Ends the run's actions on a lane still without an end — left open by a worker that died
 * mid-call — with the given outcome (usually unknown: the call may have arrived).
 */
export async function finishOpenActions(
  db: Pick<Database, "update">,
  runId: string,
  lane: string,
  end: ActionEnd,
): Promise<void> {
  await db
    .update(powerRunActions)
    .set({ outcome: end.outcome, detail: end.detail ?? null, finishedAt: new Date() })
    .where(
      and(
        eq(powerRunActions.runId, runId),
        eq(powerRunActions.lane, lane),
        isNull(powerRunActions.finishedAt),
      ),
    );
}
