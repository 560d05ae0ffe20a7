import { and, eq, sql } from "drizzle-orm";
import type { Database, Transaction } from "@/lib/db/client";
import { events, runAbortRequests, runs, stepVisits } from "@/lib/db/schema";
import { appendRunLog } from "@/lib/logs/append";
import { createRunLogWriter } from "@/lib/logs/writer";
import { notifyRunEvent } from "@/lib/notify/run-events";
import { ABORT_REASON } from "./abort-reason";
import type { AbortNotices } from "./abort-notices";
import { RunContext } from "./context";
import { inQueryScope } from "./query-scope";
import { scheduleTick } from "./schedule";
import type { AnyPipeline, Outcome, RunFailure, Step, Waiter, WorkerResources } from "./step";
import type { WaitRegistry } from "./waits";
import { notifyLive } from "@/lib/live/notify";

export type EngineOptions = {
  db: Database;
  pipelines: Readonly<Record<string, AnyPipeline>>;
  /** Thrown visits in a row before the run fails with the error's message. */
  maxTransientErrors?: number;
  /** Seconds to wait before re-visiting after the n-th consecutive thrown error (n ≥ 1). */
  backoffSeconds?: (n: number) => number;
  /** How long the visit may keep running after its deadline before the engine moves on. */
  now?: () => Date;
  /** How far one job carries a run on through steps that advance; `false`: one visit per job. */
  carryOn?: CarryOnBound | false;
  /** Where polls with a waiter are watched (the worker's); absent: the poll's tick alone. */
  waits?: WaitRegistry;
  /** How an abort request reaches a visit in flight (the worker's LISTEN); absent: at persist. */
  abortNotices?: AbortNotices;
  /** Kept across ticks for the pipelines' services (the worker's SSH connections). */
  resources?: WorkerResources;
  /**
   * Asked before an advance carries on: does a due job wait for the slot this job holds (every
   * slot of the worker taken, and the queue not empty)? Then the run yields its slot — its next
   * tick is queued like any other, behind the ones already due — instead of running its next
   * steps ahead of them. Absent: it carries on within the bound.
   */
  slotWanted?: () => Promise<boolean>;
};

/**
 * A job whose visit advances runs the next step's first visit itself instead of queueing a new
 * job for it (which waits for a free slot and the worker's poll when the queue is busy), within
 * this bound, so one run never holds a worker slot from the runs queued behind it for long.
 */
export type CarryOnBound = { maxVisits: number; maxSeconds: number };
export const DEFAULT_CARRY_ON: CarryOnBound = { maxVisits: 10, maxSeconds: 30 };

export type TickResult =
  | { kind: "skipped"; reason: string }
  | {
      kind: "visited";
      step: string;
      outcome: Outcome["kind"] | "error";
      runStatus: "running" | "succeeded" | "failed";
      /** This job visits the run again at once; no new tick was queued for it. */
      carriesOn?: true;
    };

/** What the job running this tick knows beyond the run id. */
export type TickOptions = {
  /** Asked when a visit advances: may the next step run in this job? Absent: it never does. */
  mayCarryOn?: () => boolean | Promise<boolean>;
};

export { ABORT_REASON };

export function defaultBackoffSeconds(n: number): number {
  return Math.min(2 ** n, 60);
}

type RunRow = typeof runs.$inferSelect;
type Tx = Transaction;

/** What the engine decided for this visit, before it is written. */
type Decision =
  | { kind: "advance"; detail?: string }
  | { kind: "poll"; seconds: number; phase?: string; detail?: string; watch?: Waiter }
  | { kind: "fail"; reason: string; detail?: string; cause?: FailCause }
  | { kind: "error"; message: string; retryInSeconds: number | null };

/** Who failed the run, when not the step's own fail (RunFailure, for the pipeline's onFailed). */
type FailCause = Exclude<RunFailure["cause"], "step" | "errors">;

/**
 * Executes one visit ("tick") of one run: lock the run row, visit its current step, and write
 * the visit record, the outcome, the context and the next tick in one transaction.
 *
 * The row lock (held for the whole visit) is what makes "at most one tick per run in flight"
 * true even when two jobs for the same run exist: graphile-worker's job key only collapses
 * *pending* jobs, and a job added while another is running creates a second one.
 */
export async function tickRun(
  options: EngineOptions,
  runId: string,
  tick: TickOptions = {},
): Promise<TickResult> {
  const now = options.now ?? (() => new Date());
  // This tick reads and decides now: whatever this process watched for the run has done its job.
  options.waits?.cancel(runId);
  // Set inside the transaction, used once it committed.
  const watched: { poll?: { waiter: Waiter; step: string; visit: number; seconds: number } } = {};
  const result = await inQueryScope("engine", () =>
    options.db.transaction(async (tx): Promise<TickResult> => {
      // A tick blocked behind a live tick waits rather than skips, so a wake-up (abort) that
      // arrived during the other tick is not lost; lock_timeout bounds the wait.
      await tx.execute(sql`set local lock_timeout = '120s'`);
      // The row lock and the abort request in one round trip (the request is its own table so
      // recording it never waits for this lock).
      const [locked] = await tx
        .select({ run: runs, abortBy: runAbortRequests.requestedBy })
        .from(runs)
        .leftJoin(runAbortRequests, eq(runAbortRequests.runId, runs.id))
        .where(eq(runs.id, runId))
        .for("no key update", { of: runs });
      const run = locked?.run;
      if (!run) return { kind: "skipped", reason: "run does not exist" };
      if (run.status !== "running") return { kind: "skipped", reason: `run is ${run.status}` };

      const pipeline = options.pipelines[run.pipeline];
      const step = pipeline?.steps.find((candidate) => candidate.name === run.currentStep);
      const startedAt = now();
      if (!pipeline || !step) {
        const reason = pipeline
          ? `step ${run.currentStep} is not part of pipeline ${run.pipeline} in this version of the console`
          : `pipeline ${run.pipeline} is not known to this worker`;
        await persist(
          tx,
          run,
          run.currentStep,
          startedAt,
          startedAt,
          { kind: "fail", reason, cause: "engine" },
          null,
          now,
          // Known or not, its own hook hears of the failure: the run did not end well.
          pipeline,
        );
        return { kind: "visited", step: run.currentStep, outcome: "fail", runStatus: "failed" };
      }

      const context = new RunContext(run.context);
      const visit = run.stepVisit + 1;
      const elapsedSeconds = (startedAt.getTime() - run.stepStartedAt.getTime()) / 1000;
      const pausedSeconds = chainPausedSeconds(run, startedAt);
      const activeSeconds = elapsedSeconds - pausedSeconds;
      // Log lines commit on their own while the visit runs (see lib/logs/writer.ts).
      const logWriter = createRunLogWriter(options.db, run.id);
      const log = (line: string) => logWriter.line(step.name, "note", line);
      const controller = new AbortController();
      // What the services' commands stop with: the visit's signal, then a clean-up's own.
      let tickSignal = controller.signal;
      const { services, dispose } = pipeline.services(
        {
          runId: run.id,
          hostId: run.hostId,
          step: step.name,
          log: (line, kind = "note") => logWriter.line(step.name, kind, line),
          maskSecret: logWriter.maskSecret,
          get signal() {
            return tickSignal;
          },
        },
        options.db,
        options.resources ?? {},
      );
      const ctx = {
        runId: run.id,
        hostId: run.hostId,
        visit,
        elapsedSeconds,
        phase: run.phase,
        context,
        signal: controller.signal,
        log,
        services,
      };

      let decision: Decision;
      let abortedBy = locked.abortBy;
      try {
        if (abortedBy !== null) {
          decision = await abortStep(step, ctx, abortedBy);
        } else if (activeSeconds > step.maxDuration()) {
          decision = {
            kind: "fail",
            reason: exceededReason(step, activeSeconds, pausedSeconds),
            cause: "deadline",
          };
        } else {
          // The operator's abort, heard while the visit runs, cuts it short (its commands stop
          // with ctx.signal) and the step's abort runs in this tick, not after the visit.
          let abortHeard = false;
          const heard = options.abortNotices?.during(run.id, () => {
            abortHeard = true;
            controller.abort(new Error("the operator aborted the run"));
          });
          try {
            decision = await inQueryScope("step", () =>
              visitWithDeadline(step, ctx, controller, activeSeconds, pausedSeconds),
            );
          } finally {
            heard?.();
          }
          abortedBy = abortHeard ? await abortRequester(tx, run.id) : null;
          if (abortedBy !== null) {
            tickSignal = new AbortController().signal;
            decision = await abortStep(step, { ...ctx, signal: tickSignal }, abortedBy);
          } else if (decision.kind === "error") {
            decision = transientError(decision.message, run.errorCount + 1, options);
          }
        }
        if (endsRunAsFailed(decision) && abortedBy === null)
          await cleanupStep(step, ctx, (signal) => (tickSignal = signal));
      } finally {
        controller.abort();
        await dispose().catch(() => {});
        // Before persist: its own log line takes the head row lock inside the tick's transaction.
        // The visit's last log lines are the step's queries, not the engine's bookkeeping.
        await inQueryScope("step", () => logWriter.close());
      }

      const finishedAt = now();
      // A thrown visit leaves no half-written keys: its context changes are dropped.
      const nextContext = decision.kind === "error" ? null : context;
      const carriesOn = await persist(
        tx,
        run,
        step.name,
        startedAt,
        finishedAt,
        decision,
        nextContext,
        now,
        pipeline,
        { stepPausedSeconds: pausedSeconds },
        tick.mayCarryOn,
      );
      const runStatus =
        decision.kind === "fail" || (decision.kind === "error" && decision.retryInSeconds === null)
          ? "failed"
          : decision.kind === "advance" && isLastStep(pipeline, step)
            ? "succeeded"
            : "running";
      if (decision.kind === "poll" && decision.watch)
        watched.poll = {
          waiter: decision.watch,
          step: step.name,
          visit: run.stepVisit + 1,
          seconds: decision.seconds,
        };
      return {
        kind: "visited",
        step: step.name,
        outcome: decision.kind,
        runStatus,
        ...(carriesOn && { carriesOn }),
      };
    }),
  );
  // Committed: the poll's tick is queued, so a wake-up can move it.
  if (watched.poll && options.waits) {
    const { waiter, ...waiting } = watched.poll;
    options.waits.watch({ runId, ...waiting }, waiter);
  }
  return result;
}

/**
 * What one tick job does: visit the run, and while a visit advances and the bound allows, visit
 * the next step at once. Each visit is tickRun's own transaction, committed before the next one
 * starts and decided from the committed row, so stopping anywhere in between (a throw, a kill)
 * leaves the run exactly where a new job would pick it up.
 */
export async function runTickJob(
  options: EngineOptions,
  runId: string,
  /** The worker is stopping: finish the visit under way, start no further one. */
  stopping?: AbortSignal,
): Promise<TickResult[]> {
  const now = options.now ?? (() => new Date());
  const bound = options.carryOn === undefined ? DEFAULT_CARRY_ON : options.carryOn;
  const until = now().getTime() + (bound ? bound.maxSeconds * 1000 : 0);
  const results: TickResult[] = [];
  const withinBound = () =>
    bound !== false &&
    results.length + 1 < bound.maxVisits &&
    now().getTime() < until &&
    !stopping?.aborted;
  const mayCarryOn = async () => {
    if (!withinBound()) return false;
    // Not knowing whether anyone waits is no reason to stop: carrying on is what it did before.
    const wanted = options.slotWanted ? await options.slotWanted().catch(() => false) : false;
    return !wanted;
  };
  for (;;) {
    const result = await tickRun(options, runId, { mayCarryOn });
    results.push(result);
    if (result.kind !== "visited" || !result.carriesOn) return results;
  }
}

/** A thrown visit is transient: re-visit with backoff until the attempts run out, then fail. */
function transientError(message: string, attempts: number, options: EngineOptions): Decision {
  if (attempts >= (options.maxTransientErrors ?? 5))
    return { kind: "error", message, retryInSeconds: null };
  return {
    kind: "error",
    message,
    retryInSeconds: (options.backoffSeconds ?? defaultBackoffSeconds)(attempts),
  };
}

/**
 * The seconds of the current chain the run spent overdue — its tick was due and nothing ran it:
 * the database or every worker was away. A step is not to blame for them: during a power outage
 * the console restarting must not fail the shutdown it then resumes (docs/decisions.md).
 */
function chainPausedSeconds(run: RunRow, startedAt: Date): number {
  const before = run.stepVisit === 0 ? 0 : run.stepPausedSeconds;
  const overdueMs = run.nextTickAt ? startedAt.getTime() - run.nextTickAt.getTime() : 0;
  return before + Math.max(0, overdueMs) / 1000;
}

async function visitWithDeadline(
  step: Step<unknown>,
  ctx: Parameters<Step<unknown>["visit"]>[0],
  controller: AbortController,
  activeSeconds: number,
  pausedSeconds: number,
): Promise<Decision> {
  const remainingSeconds = step.maxDuration() - activeSeconds;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"deadline">((resolve) => {
    timer = setTimeout(() => resolve("deadline"), Math.max(0, remainingSeconds * 1000));
  });
  try {
    const result = await Promise.race([step.visit(ctx), deadline]);
    if (result === "deadline") {
      controller.abort(new Error(`${step.name} exceeded its maximum duration`));
      return {
        kind: "fail",
        reason: exceededReason(step, activeSeconds + remainingSeconds, pausedSeconds),
        cause: "deadline",
      };
    }
    return validOutcome(step, result);
  } catch (error) {
    return { kind: "error", message: errorMessage(error), retryInSeconds: 0 };
  } finally {
    clearTimeout(timer);
  }
}

function endsRunAsFailed(decision: Decision): boolean {
  return (
    decision.kind === "fail" || (decision.kind === "error" && decision.retryInSeconds === null)
  );
}

/** The run fails at this step: it may stop what it left running (a visit cut off included). */
async function cleanupStep(
  step: Step<unknown>,
  ctx: Parameters<Step<unknown>["visit"]>[0],
  onSignal: (signal: AbortSignal) => void,
): Promise<void> {
  if (!step.cleanup) return;
  try {
    // The visit's signal is spent when maxDuration cut it off; the clean-up gets its own.
    const signal = AbortSignal.timeout(120_000);
    onSignal(signal);
    await inQueryScope("step", () => step.cleanup!({ ...ctx, signal }));
  } catch (error) {
    ctx.log(`${step.name} clean-up after the failure failed: ${errorMessage(error)}`);
  }
}

async function abortStep(
  step: Step<unknown>,
  ctx: Parameters<Step<unknown>["visit"]>[0],
  by: string,
): Promise<Decision> {
  if (!step.abort) {
    return { kind: "fail", reason: ABORT_REASON, detail: `requested by ${by}`, cause: "aborted" };
  }
  try {
    await inQueryScope("step", () => step.abort!(ctx));
    return {
      kind: "fail",
      reason: ABORT_REASON,
      detail: `requested by ${by}; ${step.name} cleaned up`,
      cause: "aborted",
    };
  } catch (error) {
    ctx.log(`${step.name} clean-up after abort failed: ${errorMessage(error)}`);
    return {
      kind: "fail",
      reason: ABORT_REASON,
      detail: `requested by ${by}; clean-up failed: ${errorMessage(error)}`,
      cause: "aborted",
    };
  }
}

/** Who asked to abort the run, when a request is recorded. */
async function abortRequester(tx: Tx, runId: string): Promise<string | null> {
  const [request] = await tx
    .select({ requestedBy: runAbortRequests.requestedBy })
    .from(runAbortRequests)
    .where(eq(runAbortRequests.runId, runId));
  return request?.requestedBy ?? null;
}

function validOutcome(step: Step<unknown>, outcome: Outcome): Decision {
  if (outcome.kind === "poll" && !(Number.isFinite(outcome.seconds) && outcome.seconds >= 0)) {
    throw new Error(
      `${step.name} asked to poll after ${outcome.seconds} s, which is not a duration`,
    );
  }
  return outcome;
}

function exceededReason(step: Step<unknown>, activeSeconds: number, pausedSeconds: number): string {
  const paused =
    pausedSeconds >= 1
      ? `; not counted: ${Math.round(pausedSeconds)} s while the console could not tick it`
      : "";
  return `${step.name} did not finish within its maximum duration of ${step.maxDuration()} s (ran ${Math.round(activeSeconds)} s${paused})`;
}

function isLastStep(pipeline: AnyPipeline, step: Step<unknown>): boolean {
  return pipeline.steps[pipeline.steps.length - 1] === step;
}

export function errorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split("\n")[0]?.trim() || "unknown error";
}

async function persist(
  tx: Tx,
  run: RunRow,
  stepName: string,
  startedAt: Date,
  finishedAt: Date,
  decision: Decision,
  context: RunContext | null,
  now: () => Date,
  pipeline?: AnyPipeline,
  chain: { stepPausedSeconds: number } = { stepPausedSeconds: 0 },
  mayCarryOn?: TickOptions["mayCarryOn"],
): Promise<true | null> {
  const visit = run.stepVisit + 1;
  await tx.insert(stepVisits).values({
    runId: run.id,
    step: stepName,
    visit,
    startedAt,
    finishedAt,
    outcome: decision.kind,
    detail: visitDetail(decision),
  });
  const logLine = runLogLine(
    decision,
    stepName,
    pipeline?.steps[pipeline.steps.length - 1]?.name === stepName,
  );
  if (logLine) {
    await appendRunLog(tx, run.id, [
      { step: stepName, kind: "run", text: logLine, at: finishedAt },
    ]);
  }

  const contextUpdate = context?.dirty
    ? { context: context.toJSON(), contextVersion: run.contextVersion + 1 }
    : {};
  const base = { ...contextUpdate, ...chain, updatedAt: finishedAt };
  const next = nextState(run, decision, pipeline, stepName, finishedAt);
  const updated = await tx
    .update(runs)
    .set({ ...base, ...next.set })
    .where(and(eq(runs.id, run.id), eq(runs.contextVersion, run.contextVersion)))
    // An abort recorded while this visit ran must wake the run now, not after the poll delay.
    .returning({
      id: runs.id,
      abortPending: sql<boolean>`exists(select 1 from ${runAbortRequests} where ${runAbortRequests.runId} = ${runs.id})`,
    });
  if (updated.length !== 1) {
    throw new Error(
      `run ${run.id} context changed under the tick (version ${run.contextVersion}); retrying`,
    );
  }

  for (const event of next.events) {
    const [row] = await tx
      .insert(events)
      .values({ runId: run.id, hostId: run.hostId, actor: "engine", ...event })
      .returning({ id: events.id });
    await notifyRunEvent(tx, run.id, row!.id, { ...event, pipeline: run.pipeline, step: stepName });
  }
  let carriesOn: true | null = null;
  if (next.runAt) {
    if (updated[0]!.abortPending) {
      await scheduleTick(tx, run.id, now());
    } else if (next.set.currentStep && mayCarryOn !== undefined && (await mayCarryOn())) {
      // No new tick: the job running this one stays the run's tick while it carries on and keeps
      // the run's job key, so a crash hands it back (recovery sweep) or graphile retries a throw.
      carriesOn = true;
    } else {
      await scheduleTick(tx, run.id, next.runAt);
    }
  }
  if (next.set.status && next.set.status !== "running") {
    await tx.delete(runAbortRequests).where(eq(runAbortRequests.runId, run.id));
  }
  if (next.set.status === "failed" && pipeline?.onFailed) {
    // Only a fail or an error with no attempts left ends a run failed.
    const failure: RunFailure = {
      step: stepName,
      reason: next.set.failureReason!,
      cause: decision.kind === "fail" ? (decision.cause ?? "step") : "errors",
    };
    await reportFailure(tx, pipeline, run, failure, context, finishedAt);
  }
  if (next.set.status === "succeeded" && pipeline?.onSucceeded) {
    await reportEnd(tx, run, stepName, finishedAt, "success", (savepoint) =>
      pipeline.onSucceeded!(savepoint, endedRun(run, context)),
    );
  }
  await notifyLive(tx, { type: "run", runId: run.id, hostId: run.hostId });
  return carriesOn;
}

/**
 * The pipeline's onFailed, in a savepoint of the tick's transaction: its event commits with the
 * failure, and its error costs the report, never the failure itself (a run that could not be
 * failed would be visited again and again).
 */
async function reportFailure(
  tx: Tx,
  pipeline: AnyPipeline,
  run: RunRow,
  failure: RunFailure,
  context: RunContext | null,
  at: Date,
): Promise<void> {
  await reportEnd(tx, run, failure.step, at, "failure", (savepoint) =>
    pipeline.onFailed!(savepoint, endedRun(run, context), failure),
  );
}

function endedRun(run: RunRow, context: RunContext | null) {
  return {
    id: run.id,
    pipeline: run.pipeline,
    hostId: run.hostId,
    context: context?.toJSON() ?? run.context,
  };
}

/** A pipeline's end hook in a savepoint: its error costs what it wrote, never the run's end. */
async function reportEnd(
  tx: Tx,
  run: RunRow,
  step: string,
  at: Date,
  what: "failure" | "success",
  hook: (savepoint: Tx) => Promise<void>,
): Promise<void> {
  try {
    await tx.transaction(hook);
  } catch (error) {
    await appendRunLog(tx, run.id, [
      {
        step,
        kind: "run",
        text: `⚠ ${run.pipeline} could not report this ${what}: ${errorMessage(error)}`,
        at,
      },
    ]);
  }
}

/** What the run log says about this visit's outcome: errors and the run's end, nothing else. */
function runLogLine(decision: Decision, stepName: string, lastStep: boolean): string | null {
  switch (decision.kind) {
    case "advance":
      return lastStep ? `■ run succeeded: ${stepName} was the last step` : null;
    case "poll":
      return null;
    case "fail":
      return decision.reason === ABORT_REASON
        ? `■ run ${ABORT_REASON} during ${stepName}${decision.detail ? ` (${decision.detail})` : ""}`
        : `■ run failed at ${stepName}: ${decision.reason}`;
    case "error":
      return decision.retryInSeconds === null
        ? `■ run failed at ${stepName}: ${decision.message} (no attempts left)`
        : `⚠ ${stepName} visit failed: ${decision.message}; retrying in ${decision.retryInSeconds} s`;
  }
}

function visitDetail(decision: Decision): string | null {
  switch (decision.kind) {
    case "advance":
      return decision.detail ?? null;
    case "poll":
      return decision.detail ?? decision.phase ?? null;
    case "fail":
      return decision.detail ? `${decision.reason} (${decision.detail})` : decision.reason;
    case "error":
      return decision.message;
  }
}

type NextState = {
  set: Partial<typeof runs.$inferInsert>;
  runAt: Date | null;
  events: { kind: string; message: string; data?: Record<string, unknown> }[];
};

function nextState(
  run: RunRow,
  decision: Decision,
  pipeline: AnyPipeline | undefined,
  stepName: string,
  at: Date,
): NextState {
  const visit = run.stepVisit + 1;
  const failed = (reason: string): NextState => ({
    set: {
      status: "failed",
      failureReason: reason,
      failedStep: stepName,
      stepVisit: visit,
      phase: null,
      finishedAt: at,
      nextTickAt: null,
    },
    runAt: null,
    events: [
      {
        kind: reason === ABORT_REASON ? "run.aborted" : "run.failed",
        message: `${stepName}: ${reason}`,
      },
    ],
  });
  switch (decision.kind) {
    case "fail":
      return failed(decision.reason);
    case "error":
      if (decision.retryInSeconds === null) return failed(decision.message);
      return {
        set: {
          errorCount: run.errorCount + 1,
          stepVisit: visit,
          nextTickAt: addSeconds(at, decision.retryInSeconds),
        },
        runAt: addSeconds(at, decision.retryInSeconds),
        events: [],
      };
    case "poll":
      return {
        set: {
          errorCount: 0,
          stepVisit: visit,
          phase: decision.phase ?? null,
          nextTickAt: addSeconds(at, decision.seconds),
        },
        runAt: addSeconds(at, decision.seconds),
        events: [],
      };
    case "advance": {
      const steps = pipeline?.steps ?? [];
      const index = steps.findIndex((s) => s.name === stepName);
      const nextStep = steps[index + 1];
      if (!nextStep) {
        return {
          set: {
            status: "succeeded",
            errorCount: 0,
            stepVisit: visit,
            phase: null,
            finishedAt: at,
            nextTickAt: null,
          },
          runAt: null,
          events: [{ kind: "run.succeeded", message: `${run.pipeline} finished` }],
        };
      }
      return {
        set: {
          currentStep: nextStep.name,
          stepVisit: 0,
          stepStartedAt: at,
          stepPausedSeconds: 0,
          errorCount: 0,
          phase: null,
          nextTickAt: at,
        },
        runAt: at,
        events: [
          { kind: "step.advanced", message: `${stepName} done`, data: { next: nextStep.name } },
        ],
      };
    }
  }
}

function addSeconds(date: Date, seconds: number): Date {
  return new Date(date.getTime() + seconds * 1000);
}
