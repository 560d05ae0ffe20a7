import { sql, type SQL } from "drizzle-orm";
import type { Database } from "@/lib/db/client";

type Executor = Pick<Database, "execute">;

/*
 * Live updates, the sending side: every committed state change NOTIFYs the web servers, whose
 * one LISTEN connection each (listener.ts) relays it to the open browser streams. Below every
 * module that announces a change: the engine, logs, auth, notifications, power, the supervisor.
 */

export const LIVE_CHANNEL = "clupilot_live";

/**
 * What a `run` notification says about the run as committed: enough for the fleet view to patch
 * the host's row in place (state, step, phase) instead of re-reading it. Long texts are cut so a
 * payload stays far below Postgres's 8000-byte NOTIFY limit; the full text is one read away.
 */
export type LiveRunFacts = {
  status: "running" | "succeeded" | "failed";
  pipeline: string;
  step: string;
  phase: string | null;
  stepStartedAt: string;
  failedStep: string | null;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  /** An operator's abort is recorded and not yet carried out (lib/runs/abort-run.ts). */
  abortRequested: boolean;
};

export type LiveMessage =
  | ({ type: "run"; runId: string; hostId: string | null } & Partial<LiveRunFacts>)
  | { type: "host"; hostId: string }
  /** New run-log chunks up to `seq` committed (lib/logs); only the log streams relay it. */
  | { type: "log"; runId: string; seq: number }
  /** What `userId` may do changed (lib/auth/access-changed.ts); never relayed to a browser. */
  | { type: "access"; userId: string }
  /** npm start's supervisor restarted one of the console's processes (lib/supervisor). */
  | { type: "process-restart"; process: string }
  /**
   * Power state changed (lib/power): a UPS's reading or state (`upsId`), a power event
   * (`eventId`), or the mode or configuration (both null). The UI re-reads what it shows.
   */
  | { type: "power"; upsId: string | null; eventId: number | null }
  /**
   * The records a list page shows changed (`catalog`: plans and versions; `users`: accounts and
   * API tokens): a page showing that list re-renders. Carries nothing but which list.
   */
  | { type: "list"; list: LiveList };

/** The list pages the live stream keeps current (see the `list` message). */
export type LiveList = "catalog" | "users";

/** Characters of phase / failure reason a notification carries (the row shows one line). */
export const LIVE_PHASE_MAX = 300;
export const LIVE_REASON_MAX = 500;

/**
 * Tells every listening web server that something changed; delivered on commit. A `run` message
 * is completed from the run's row as this transaction sees it (its own update included), so the
 * facts are exactly what commits with it.
 */
export async function notifyLive(tx: Executor, message: LiveMessage): Promise<void> {
  if (message.type !== "run") {
    await tx.execute(liveNotifyQuery(message));
    return;
  }
  const bare = JSON.stringify({ type: "run", runId: message.runId, hostId: message.hostId });
  await tx.execute(sql`
    select pg_notify(${LIVE_CHANNEL}, coalesce((
      select json_build_object(
        'type', 'run', 'runId', r.id, 'hostId', r.host_id, 'status', r.status,
        'pipeline', r.pipeline, 'step', r.current_step, 'phase', left(r.phase, ${LIVE_PHASE_MAX}),
        'stepStartedAt', r.step_started_at, 'failedStep', r.failed_step,
        'failureReason', left(r.failure_reason, ${LIVE_REASON_MAX}),
        'createdAt', r.created_at, 'updatedAt', r.updated_at, 'finishedAt', r.finished_at,
        'abortRequested', exists(select 1 from run_abort_requests a where a.run_id = r.id)
      )::text
      from runs r where r.id = ${message.runId}::uuid
    ), ${bare}))`);
}

/**
 * The NOTIFY of a message that carries all it says, as a query of its own: for a writer that
 * sends it in the same statement as its writes (lib/logs/append.ts).
 */
export function liveNotifyQuery(message: Exclude<LiveMessage, { type: "run" }>): SQL {
  return sql`select pg_notify(${LIVE_CHANNEL}, ${JSON.stringify(message)})`;
}
