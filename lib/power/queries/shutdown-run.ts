import { asc, desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts, powerShutdownCalls, powerTargets, runs } from "@/lib/db/schema";
import { getRun, type RunDetail } from "@/lib/runs/get-run";
import { runOriginOf, type RunOrigin } from "@/lib/power/shutdown/run-origin";
import { POWER_SHUTDOWN, powerShutdownPipeline } from "@/lib/power/shutdown-pipeline/pipeline";
import { loadPowerRunFacts } from "./power-run-facts";
import {
  describePowerRun,
  powerStepVerdicts,
  type PowerRunVerdict,
  type PowerStepVerdict,
} from "./power-run-verdict";

export type ShutdownCallView = {
  /** The attempt's own row id (a target has one row per attempt). */
  id: number;
  targetId: string;
  targetName: string;
  /** 1 for the first call of the target in this run; a failed or unanswered one is sent again. */
  attempt: number;
  state: "would_send" | "sending" | "sent" | "failed" | "unknown";
  /** The exact request, secret masked. */
  request: string;
  detail: string | null;
  startedAt: string;
  finishedAt: string | null;
  /** When the target was seen down after this call; null: not (yet). */
  seenDownAt: string | null;
};

export type ShutdownRunView = {
  run: RunDetail;
  calls: ShutdownCallView[];
  /** What started it: a drill (by whom, live or not) or a UPS's trigger. */
  origin: RunOrigin;
  /** The run's one line: what happened (./power-run-verdict.ts). */
  verdict: PowerRunVerdict;
  /** Steps the engine calls done that were skipped or only dry-run, by step name. */
  steps: Record<string, PowerStepVerdict>;
};

/**
 * The latest power-shutdown run (the one running now, or the last one) with what it sent or
 * would have sent to each target, in the order it did; null when there never was one.
 */
export async function latestShutdownRun(db: Database): Promise<ShutdownRunView | null> {
  const [latest] = await db
    .select({ id: runs.id })
    .from(runs)
    .where(eq(runs.pipeline, POWER_SHUTDOWN))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(1);
  if (!latest) return null;
  return shutdownRunView(db, latest.id);
}

/** One power-shutdown run as the run card shows it; null when no power run has this id. */
export async function shutdownRunView(
  db: Database,
  runId: string,
): Promise<ShutdownRunView | null> {
  const [run, [row], calls] = await Promise.all([
    getRun(db, runId, { [POWER_SHUTDOWN]: powerShutdownPipeline }),
    db.select().from(runs).where(eq(runs.id, runId)),
    db
      .select({ call: powerShutdownCalls, hostName: hosts.name, pbsName: powerTargets.name })
      .from(powerShutdownCalls)
      .innerJoin(powerTargets, eq(powerTargets.id, powerShutdownCalls.targetId))
      .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
      .where(eq(powerShutdownCalls.runId, runId))
      .orderBy(asc(powerShutdownCalls.id)),
  ]);
  if (!run || !row || row.pipeline !== POWER_SHUTDOWN) return null;
  // The run row read beside getRun may be a tick newer: the verdict follows what the row says.
  const facts = (await loadPowerRunFacts(db, [row])).get(row.id)!;
  return {
    run,
    calls: calls.map(({ call, hostName, pbsName }) => ({
      id: call.id,
      targetId: call.targetId,
      targetName: hostName ?? pbsName ?? call.targetId,
      attempt: call.attempt,
      state: call.state,
      request: call.request,
      detail: call.detail,
      startedAt: call.startedAt.toISOString(),
      finishedAt: call.finishedAt?.toISOString() ?? null,
      seenDownAt: call.seenDownAt?.toISOString() ?? null,
    })),
    origin: runOriginOf(row.context),
    verdict: describePowerRun({
      ...facts,
      status: run.status,
      failureReason: run.failureReason,
      failedStep: run.failedStep,
      currentStep: run.currentStep,
    }),
    steps: powerStepVerdicts(facts, run.timeline),
  };
}
