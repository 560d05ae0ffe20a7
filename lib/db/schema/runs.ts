import {
  pgTable,
  uuid,
  text,
  integer,
  timestamp,
  jsonb,
  pgEnum,
  index,
  doublePrecision,
} from "drizzle-orm/pg-core";
import { hosts } from "./hosts";

export const runStatus = pgEnum("run_status", ["running", "succeeded", "failed"]);

/**
 * One execution of a pipeline (e.g. the onboarding of one host). The run context lives here,
 * not in worker memory, so a worker crash loses nothing a step committed.
 */
export const runs = pgTable(
  "runs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    hostId: uuid("host_id").references(() => hosts.id),
    pipeline: text("pipeline").notNull(),
    /**
     * The graphile-worker task its ticks run as, fixed at start from the pipeline's queue: power
     * runs tick on their own runner and never wait behind onboarding (lib/pipeline/schedule.ts).
     */
    tickTask: text("tick_task").notNull().default("run-tick"),
    status: runStatus("status").notNull().default("running"),
    currentStep: text("current_step").notNull(),
    phase: text("phase"),
    context: jsonb("context").$type<Record<string, unknown>>().notNull().default({}),
    /** Bumped on every context write; writers compare-and-set on it. */
    contextVersion: integer("context_version").notNull().default(0),
    /** When the current step's visit chain began; maxDuration counts from here, less the pause below. */
    stepStartedAt: timestamp("step_started_at", { withTimezone: true }).notNull().defaultNow(),
    /**
     * Seconds of the current chain the run spent overdue: its tick was due and nothing could run
     * it (the database or every worker away). maxDuration does not count them (lib/pipeline/engine.ts);
     * only meaningful from the chain's second visit on (step_visit > 0).
     */
    stepPausedSeconds: doublePrecision("step_paused_seconds").notNull().default(0),
    /** Visits of the current step in the current chain (1 = first visit). */
    stepVisit: integer("step_visit").notNull().default(0),
    /** Consecutive thrown errors of the current step; reset by any regular outcome. */
    errorCount: integer("error_count").notNull().default(0),
    nextTickAt: timestamp("next_tick_at", { withTimezone: true }),
    failureReason: text("failure_reason"),
    failedStep: text("failed_step"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (t) => [index("runs_host_id_idx").on(t.hostId, t.createdAt)],
);

/**
 * An operator's request to stop a run. Kept out of `runs` on purpose: a tick holds the run's
 * row lock for the whole visit, and an abort must be recordable without waiting for it.
 */
export const runAbortRequests = pgTable("run_abort_requests", {
  runId: uuid("run_id")
    .primaryKey()
    .references(() => runs.id, { onDelete: "cascade" }),
  requestedAt: timestamp("requested_at", { withTimezone: true }).notNull().defaultNow(),
  requestedBy: text("requested_by").notNull(),
});
