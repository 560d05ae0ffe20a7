import { and, asc, desc, eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, powerRunActions, runs } from "@/lib/db/schema";
import { getRun, type RunDetail } from "@/lib/runs/get-run";
import { POWER_BACK, powerBackPipeline } from "@/lib/power/power-back-pipeline/pipeline";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import {
  describePowerBack,
  powerBackOriginOf,
  powerBackStepVerdicts,
  type PowerBackFacts,
  type PowerBackOrigin,
} from "./power-back-verdict";
import { previewPowerBack, type PowerBackPreview } from "./power-back-preview";
import type { PowerRunVerdict, PowerStepVerdict } from "./power-run-verdict";

export type PowerBackRunView = {
  run: RunDetail;
  /** Who started it: an admin's Bring back now, or the power monitor and why. */
  origin: PowerBackOrigin;
  /** The way back's one line (./power-back-verdict.ts). */
  verdict: PowerRunVerdict;
  /** Steps the engine calls done that were skipped or only dry-run, by step name. */
  steps: Record<string, PowerStepVerdict>;
};

type RunRow = Pick<
  typeof runs.$inferSelect,
  "id" | "status" | "failureReason" | "failedStep" | "currentStep" | "phase" | "context"
>;

/** What the verdict of each of these power-back runs is decided from. */
export async function loadPowerBackFacts(
  db: Pick<Database, "select">,
  rows: readonly RunRow[],
): Promise<Map<string, PowerBackFacts>> {
  const ids = rows.map((r) => r.id);
  const [actions, aborts] =
    ids.length === 0
      ? [[], []]
      : await Promise.all([
          db
            .select({
              runId: powerRunActions.runId,
              lane: powerRunActions.lane,
              label: powerRunActions.label,
              outcome: powerRunActions.outcome,
              detail: powerRunActions.detail,
            })
            .from(powerRunActions)
            .where(inArray(powerRunActions.runId, ids))
            .orderBy(asc(powerRunActions.id)),
          // Who asked for an abort: the power monitor's says mains was lost again.
          db
            .select({ runId: events.runId, actor: events.actor })
            .from(events)
            .where(and(inArray(events.runId, ids), eq(events.kind, "run.abort_requested")))
            .orderBy(asc(events.id)),
        ]);
  return new Map(
    rows.map((row) => [
      row.id,
      {
        status: row.status,
        failureReason: row.failureReason,
        failedStep: row.failedStep,
        currentStep: row.currentStep,
        phase: row.phase,
        context: row.context,
        actions: actions.filter((a) => a.runId === row.id),
        abortedBy: aborts.findLast((a) => a.runId === row.id)?.actor ?? null,
      },
    ]),
  );
}

/**
 * The way back the power page shows beside the latest shutdown: the one running now, or the
 * latest one when it came after the latest shutdown run (it answers the latest outage). Null
 * when there is none, or the latest outage has not been brought back yet.
 */
export async function latestPowerBackRun(db: Database): Promise<PowerBackRunView | null> {
  const latest = await db
    .select({ id: runs.id, pipeline: runs.pipeline, status: runs.status })
    .from(runs)
    .where(inArray(runs.pipeline, [POWER_BACK, POWER_SHUTDOWN]))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(20);
  const back =
    latest.find((r) => r.pipeline === POWER_BACK && r.status === "running") ??
    (latest[0]?.pipeline === POWER_BACK ? latest[0] : undefined);
  return back ? powerBackRunView(db, back.id) : null;
}

/** One power-back run as its card shows it; null when no power-back run has this id. */
export async function powerBackRunView(
  db: Database,
  runId: string,
): Promise<PowerBackRunView | null> {
  const [run, [row]] = await Promise.all([
    getRun(db, runId, { [POWER_BACK]: powerBackPipeline }),
    db.select().from(runs).where(eq(runs.id, runId)),
  ]);
  if (!run || !row || row.pipeline !== POWER_BACK) return null;
  // The verdict follows the run as getRun read it (status, step, phase): one moment, one story.
  const facts = (await loadPowerBackFacts(db, [row])).get(row.id)!;
  const atRun: PowerBackFacts = {
    ...facts,
    status: run.status,
    failureReason: run.failureReason,
    failedStep: run.failedStep,
    currentStep: run.currentStep,
    phase: run.phase,
  };
  return {
    run,
    origin: powerBackOriginOf(row.context),
    verdict: describePowerBack(atRun),
    steps: powerBackStepVerdicts(atRun, run.timeline),
  };
}

/** The power page's way back: the latest run, and what Bring back now would do now. */
export type PowerBackPageView = {
  powerBack: PowerBackRunView | null;
  bringBack: PowerBackPreview;
};

export async function powerBackPageView(db: Database): Promise<PowerBackPageView> {
  const [powerBack, bringBack] = await Promise.all([latestPowerBackRun(db), previewPowerBack(db)]);
  return { powerBack, bringBack };
}
