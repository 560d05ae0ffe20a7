/**
 * Terminology
 * - run: one execution of a pipeline for one subject (e.g. onboarding one host).
 * - step: a module establishing one goal; visited until it advances or fails.
 * - visit ("tick"): one call of `step.visit(ctx)`, executed by one graphile-worker job.
 * - visit chain: the consecutive visits of one step since it was entered (or retried).
 * - run context: a small JSON document in Postgres that steps read and write.
 */
import type { LogLineKind } from "@/lib/logs/chunks";
import type { RunContext } from "./context";

export type Outcome =
  | { kind: "advance"; detail?: string }
  | { kind: "poll"; seconds: number; phase?: string; detail?: string }
  | { kind: "fail"; reason: string };

/** The step's goal holds (or was just established): visit the next step at once. */
export const advance = (detail?: string): Outcome => ({ kind: "advance", detail });

/** Not done yet: visit this step again in `seconds`; `phase` shows on the live phase line. */
export const poll = (seconds: number, phase?: string, detail?: string): Outcome => ({
  kind: "poll",
  seconds,
  phase,
  detail,
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
  context: RunContext;
  /** Aborted when the visit outlives the step's remaining maxDuration. */
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
    run: RunRef & RunLogSink,
    db: import("@/lib/db/client").Database,
  ): { services: Services; dispose(): Promise<void> };
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
