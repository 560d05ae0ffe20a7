/**
 * Terminology
 * - run: one execution of a pipeline for one subject (e.g. onboarding one host).
 * - step: a module establishing one goal; visited until it advances or fails.
 * - visit ("tick"): one call of `step.visit(ctx)`, executed by one graphile-worker job.
 * - visit chain: the consecutive visits of one step since it was entered (or retried).
 * - run context: a small JSON document in Postgres that steps read and write.
 */
import type { SourcePosition } from "@/lib/logs/append";
import type { LogEntry, LogLineKind } from "@/lib/logs/chunks";
import type { SshConnectionPool } from "@/lib/ssh/pool";
import type { RunContext } from "./context";

export type Outcome =
  | { kind: "advance"; detail?: string }
  | { kind: "poll"; seconds: number; phase?: string; detail?: string; watch?: Waiter }
  | { kind: "fail"; reason: string };

/**
 * What a polling step waits for, watched by the worker process outside its job slots
 * (lib/pipeline/waits.ts) once the poll is committed. `wait` resolves `true` when what the step
 * reads may have changed (the run's tick is then queued at once), `false` when it stopped
 * watching without seeing a change, and ends soon after `signal` aborts. It decides nothing:
 * the tick it wakes reads and decides, and the poll's own tick stays the fallback. Built during
 * the visit, run after it: it must not use the tick's services, which are disposed by then.
 *
 * While it waits it may show what it sees (`progress`): the phase line, and the lines of a host
 * file it follows. What it shows decides nothing either; it is written only while the run still
 * waits where the visit polled, so the next visit finds it and goes on from there.
 */
export type Waiter = {
  /** For the worker's log: "the template build's status files". */
  what: string;
  wait(signal: AbortSignal, progress: WaitProgress): Promise<boolean>;
};

/** What a waiter may show while the run waits (lib/pipeline/waits.ts writes it). */
export type WaitProgress = {
  /**
   * Shows the phase line and/or appends run-log lines with the followed file's position, in one
   * transaction. False when the run no longer waits where the visit polled: nothing was written,
   * and the waiter has nobody left to show anything to.
   */
  report(progress: {
    phase?: string;
    log?: { entries: readonly LogEntry[]; source: SourcePosition };
  }): Promise<boolean>;
};

/** The step's goal holds (or was just established): visit the next step at once. */
export const advance = (detail?: string): Outcome => ({ kind: "advance", detail });

/** Not done yet: visit this step again in `seconds`; `phase` shows on the live phase line. */
export const poll = (seconds: number, phase?: string, detail?: string): Outcome => ({
  kind: "poll",
  seconds,
  phase,
  detail,
});

/**
 * Not done yet, and what would change that can be watched: the run's next tick comes as soon as
 * `watch` sees a change, and in `seconds` at the latest (docs/pipeline.md, "Waiting").
 */
export const pollUntil = (watch: Waiter, seconds: number, phase?: string): Outcome => ({
  kind: "poll",
  seconds,
  phase,
  watch,
});

/** Stop the run as failed with a one-line reason. Nothing retries it silently. */
export const fail = (reason: string): Outcome => ({ kind: "fail", reason });

export type RunRef = { runId: string; hostId: string | null };

/** How a pipeline's services write to the run log during one tick (see lib/logs). */
export type RunLogSink = {
  /** The step being visited: every line is filed under it. */
  step: string;
  log(line: string, kind?: LogLineKind): void;
  /** Masks this literal value (e.g. a password the services just unsealed) in the log. */
  maskSecret(value: string): void;
};

export type StepContext<Services> = RunRef & {
  /** 1 on the first visit of a chain (after entering the step, or after a Retry). */
  visit: number;
  /** Wall-clock seconds since the chain began (time the console was away included). */
  elapsedSeconds: number;
  /** The run's phase line as the tick found it: the last visit's, or what a waiter showed since. */
  phase: string | null;
  context: RunContext;
  /**
   * Aborted when the visit outlives the step's remaining maxDuration, or when the operator's
   * abort request reaches the worker while the visit runs (the engine then runs the step's
   * `abort` in the same tick). The host services bind it to every command by default.
   */
  signal: AbortSignal;
  /** Appends a line to the run's log, shown to the operator. Never pass secrets. */
  log(line: string): void;
  services: Services;
};

export type Step<Services> = {
  name: string;
  /**
   * Seconds a visit chain may last before the engine fails the step. Time the run sat overdue
   * (its tick due, the database or every worker away) does not count: the step did not run then.
   */
  maxDuration(): number;
  visit(ctx: StepContext<Services>): Promise<Outcome>;
  /** Clean-up when the operator aborts while this step is current (e.g. kill a remote build). */
  abort?(ctx: StepContext<Services>): Promise<void>;
  /**
   * Clean-up when the run fails while this step is current for any reason but an abort (which
   * has `abort`): the step's own fail, maxDuration, attempts used up. Runs after the visit, with
   * the same services; its errors are logged, the run fails anyway. Must be idempotent.
   */
  cleanup?(ctx: StepContext<Services>): Promise<void>;
};

export type Pipeline<Services> = {
  name: string;
  /** Whose worker slots its ticks take (default: the onboarding runner's). */
  queue?: import("./schedule").TickQueue;
  /** The order lives here and nowhere else. */
  steps: readonly Step<Services>[];
  /**
   * Services for one tick (e.g. an SSH connection reused by every command of the visit).
   * `dispose` runs after the visit, whatever its outcome.
   */
  services(
    run: TickScope,
    db: import("@/lib/db/client").Database,
    resources: WorkerResources,
  ): { services: Services; dispose(): Promise<void> };
  /**
   * Called once when a run of this pipeline ends failed, whatever ended it (RunFailure), in the
   * transaction that records the failure: what it writes (an event that notifies) commits with
   * the failure or not at all. Its own error does not keep the run from failing: what it wrote
   * is rolled back (a savepoint) and the run's log says it could not report.
   */
  onFailed?(
    tx: import("@/lib/db/client").Transaction,
    run: FailedRun,
    failure: RunFailure,
  ): Promise<void>;
  /**
   * Called once when a run of this pipeline ends succeeded, in the transaction that records it:
   * what it writes (a job it queues for what the success changes elsewhere) commits with the
   * success or not at all. Like onFailed, its error is rolled back (a savepoint) and said in the
   * run's log; the run succeeds anyway.
   */
  onSucceeded?(tx: import("@/lib/db/client").Transaction, run: EndedRun): Promise<void>;
};

/** The run that ended (failed or succeeded), as the visit left it. */
export type EndedRun = {
  id: string;
  pipeline: string;
  hostId: string | null;
  /** The context with what the last visit wrote (a thrown visit wrote nothing). */
  context: Record<string, unknown>;
};

/** The run that failed, as the visit left it. */
export type FailedRun = EndedRun;

/** How a run ended failed. */
export type RunFailure = {
  /** The step it failed at. */
  step: string;
  /** The run's failure reason as recorded (ABORT_REASON for an operator's abort). */
  reason: string;
  /**
   * `step`: the step's own fail; `errors`: its visits threw until the attempts were used up;
   * `deadline`: it outlived its maxDuration; `aborted`: the operator's abort; `engine`: the
   * engine could not go on (a step this version of the console does not know).
   */
  cause: "step" | "errors" | "deadline" | "aborted" | "engine";
};

/** What the services of one tick know about it. */
export type TickScope = RunRef &
  RunLogSink & {
    /**
     * The signal of what the tick runs now: the visit's (`ctx.signal`), then a clean-up's own.
     * Read it per use: it changes between the two.
     */
    readonly signal: AbortSignal;
  };

/** What the worker process keeps for its ticks beyond one tick (worker/runner.ts). */
export type WorkerResources = {
  /** SSH connections kept per host across ticks and for waiters; absent: one per tick. */
  sshConnections?: SshConnectionPool;
};

// Pipelines of different service types live in one registry; the engine only passes the
// services through, so the element type is erased here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPipeline = Pipeline<any>;

export function definePipeline<Services>(pipeline: Pipeline<Services>): Pipeline<Services> {
  const names = new Set<string>();
  for (const step of pipeline.steps) {
    if (names.has(step.name))
      throw new Error(`Pipeline ${pipeline.name} lists step ${step.name} twice`);
    names.add(step.name);
  }
  if (pipeline.steps.length === 0) throw new Error(`Pipeline ${pipeline.name} has no steps`);
  return pipeline;
}
