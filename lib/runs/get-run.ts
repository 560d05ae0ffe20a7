import { and, asc, desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, runAbortRequests, runs, stepVisits } from "@/lib/db/schema";
import { readLogHead, readLogTail } from "@/lib/logs/read";
import { isAbortedRun, runOutcome, type RunOutcome } from "@/lib/pipeline/abort-reason";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { RUN_RETRIED, splitAttempts, type StepAttempt } from "./attempts";

export type StepState = "pending" | "running" | "done" | "failed" | "aborted";

export type TimelineStep = {
  name: string;
  state: StepState;
  visits: number;
  startedAt: string | null;
  finishedAt: string | null;
  /** The latest attempt's own duration (time the run sat failed before a Retry not counted). */
  durationSeconds: number | null;
  /** The one-line reason, when this step failed. */
  failureReason: string | null;
  lastDetail: string | null;
  /** Each attempt since a Retry re-entered the step, oldest first; one when never retried. */
  attempts: StepAttempt[];
};

export type RunDetail = {
  id: string;
  hostId: string | null;
  pipeline: string;
  status: "running" | "succeeded" | "failed";
  /** The status as a person reads it: an operator's Abort is `aborted`, never `failed`. */
  outcome: RunOutcome;
  currentStep: string;
  phase: string | null;
  stepStartedAt: string;
  nextTickAt: string | null;
  failureReason: string | null;
  failedStep: string | null;
  /** Set while an operator's abort waits for the run's next tick. */
  abortRequestedAt: string | null;
  createdAt: string;
  finishedAt: string | null;
  timeline: TimelineStep[];
  events: { id: number; at: string; kind: string; actor: string; message: string }[];
  /** The last LOG_TAIL lines; `id` is the line number (the full log: /api/runs/:id/log). */
  log: { id: number; at: string; step: string; line: string }[];
  /** Lines in the whole log, and the last chunk's sequence number (where a stream resumes). */
  logLines: number;
  logSeq: number;
};

const LOG_TAIL = 500;
const EVENT_TAIL = 100;

export async function getRun(
  db: Database,
  runId: string,
  pipelines: Readonly<Record<string, AnyPipeline>>,
): Promise<RunDetail | null> {
  const [run] = await db.select().from(runs).where(eq(runs.id, runId));
  if (!run) return null;
  const [visits, eventRows, logRows, abortRows, logHead, retries] = await Promise.all([
    db.select().from(stepVisits).where(eq(stepVisits.runId, runId)).orderBy(asc(stepVisits.id)),
    db
      .select()
      .from(events)
      .where(eq(events.runId, runId))
      .orderBy(desc(events.id))
      .limit(EVENT_TAIL),
    readLogTail(db, runId, LOG_TAIL),
    db.select().from(runAbortRequests).where(eq(runAbortRequests.runId, runId)),
    readLogHead(db, runId),
    db
      .select()
      .from(events)
      .where(and(eq(events.runId, runId), eq(events.kind, RUN_RETRIED)))
      .orderBy(asc(events.id)),
  ]);
  const aborted = isAbortedRun(run);
  const stepNames = pipelines[run.pipeline]?.steps.map((s) => s.name) ?? [
    ...new Set(visits.map((v) => v.step)),
  ];
  const currentIndex = stepNames.indexOf(run.currentStep);
  const timeline = stepNames.map((name, index): TimelineStep => {
    const own = visits.filter((v) => v.step === name);
    const last = own[own.length - 1];
    const state: StepState =
      index < currentIndex || (index === currentIndex && run.status === "succeeded")
        ? "done"
        : index === currentIndex
          ? run.status === "failed"
            ? aborted
              ? "aborted"
              : "failed"
            : "running"
          : "pending";
    const attempts = splitAttempts(own, retries, name, state, run.stepStartedAt);
    const current = attempts[attempts.length - 1];
    const end = state === "running" ? null : (last?.finishedAt.toISOString() ?? null);
    return {
      name,
      state,
      visits: own.length,
      // The latest attempt's start: a running step's clock restarts with each Retry.
      startedAt: current?.startedAt ?? null,
      finishedAt: end,
      durationSeconds: current?.durationSeconds ?? null,
      failureReason: state === "failed" ? run.failureReason : null,
      lastDetail: last?.detail ?? null,
      attempts,
    };
  });
  return {
    id: run.id,
    hostId: run.hostId,
    pipeline: run.pipeline,
    status: run.status,
    outcome: runOutcome(run),
    currentStep: run.currentStep,
    phase: run.phase,
    stepStartedAt: run.stepStartedAt.toISOString(),
    nextTickAt: run.nextTickAt?.toISOString() ?? null,
    failureReason: run.failureReason,
    failedStep: run.failedStep,
    abortRequestedAt:
      run.status === "running" ? (abortRows[0]?.requestedAt.toISOString() ?? null) : null,
    createdAt: run.createdAt.toISOString(),
    finishedAt: run.finishedAt?.toISOString() ?? null,
    timeline,
    events: eventRows.reverse().map((e) => ({
      id: e.id,
      at: e.at.toISOString(),
      kind: e.kind,
      actor: e.actor,
      message: e.message,
    })),
    log: logRows.map((l) => ({ id: l.line, at: l.at, step: l.step, line: l.text })),
    logLines: logHead.lines,
    logSeq: logHead.lastSeq,
  };
}
