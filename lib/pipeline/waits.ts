import { eq, sql } from "drizzle-orm";
import type { Database, Transaction } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { notifyLive } from "@/lib/live/notify";
import { appendRunLog } from "@/lib/logs/append";
import { pause } from "./pause";
import { inQueryScope } from "./query-scope";
import { scheduleTick } from "./schedule";
import type { WaitProgress, Waiter } from "./step";

/**
 * Waiting outside the worker's job slots (docs/pipeline.md, "Waiting"). A visit that polls with
 * a waiter (`pollUntil`) has its poll committed as usual — the next tick due in `seconds`, the
 * fallback — and then this process runs the waiter. When it sees a change, the run's pending
 * tick is moved to now (scheduleTick, job key `run:<id>`, replace mode), so the tick decides
 * from what it reads at once instead of after the poll interval.
 *
 * A waiter ends, and its host side with it, when it saw a change, when the poll's own tick is
 * due, when a tick of the run starts in this process, when this process hears that the run was
 * aborted or ended (worker/run-notices.ts), and when the worker stops. A wake-up only moves the
 * tick of the visit that asked for it: once the run moved on (another visit committed, another
 * process's tick holds the row) it does nothing.
 */
export type WaitRegistry = {
  watch(run: WaitingRun, waiter: Waiter): void;
  /** The run is no longer waiting where its waiter watches. */
  cancel(runId: string): void;
  /** Every waiter ends; resolves once they all have. No waiter starts after this. */
  close(): Promise<void>;
  /** Runs watched now. */
  watching(): string[];
  readonly stats: {
    started: number;
    changed: number;
    woke: number;
    failed: number;
    /** Progress reports written (phase lines, log lines), and those the run had moved past. */
    reported: number;
    stale: number;
  };
};

/** The poll that asked: its run, step and visit number as committed, and its delay. */
export type WaitingRun = { runId: string; step: string; visit: number; seconds: number };

export type WaitRegistryOptions = {
  db: Database;
  log?: (line: string) => void;
  /**
   * Two wake-ups of one run at least this far apart: a status that changes on every look (a
   * fault) costs a tick per interval, never a tight loop. Default 500 ms.
   */
  minWakeIntervalMs?: number;
};

/** Polls shorter than this are left to their own tick (tests and the lab poll this often). */
export const MIN_WATCHED_POLL_SECONDS = 2;

export function createWaitRegistry(options: WaitRegistryOptions): WaitRegistry {
  const log = options.log ?? (() => {});
  const minWakeIntervalMs = options.minWakeIntervalMs ?? 500;
  const active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  const lastWake = new Map<string, number>();
  const stats = { started: 0, changed: 0, woke: 0, failed: 0, reported: 0, stale: 0 };
  let closed = false;

  const spacing = async (runId: string, signal: AbortSignal) => {
    const now = Date.now();
    for (const [id, at] of lastWake) if (now - at > minWakeIntervalMs) lastWake.delete(id);
    const due = (lastWake.get(runId) ?? 0) + minWakeIntervalMs - now;
    if (due > 0) await pause(due, signal);
  };

  const follow = async (run: WaitingRun, waiter: Waiter, signal: AbortSignal) => {
    const progress: WaitProgress = {
      async report(shown) {
        if (signal.aborted) return false;
        const written = await inQueryScope("worker", () => reportProgress(options.db, run, shown));
        if (written) stats.reported += 1;
        else stats.stale += 1;
        return written;
      },
    };
    let changed: boolean;
    try {
      changed = await waiter.wait(signal, progress);
    } catch (error) {
      if (signal.aborted) return;
      stats.failed += 1;
      log(
        `watching ${waiter.what} for run ${run.runId} failed (${message(error)}); its poll tick follows in ${run.seconds} s`,
      );
      return;
    }
    if (!changed || signal.aborted) return;
    stats.changed += 1;
    await spacing(run.runId, signal);
    if (signal.aborted) return;
    lastWake.set(run.runId, Date.now());
    try {
      if (await inQueryScope("worker", () => wakeRun(options.db, run))) stats.woke += 1;
    } catch (error) {
      log(`waking run ${run.runId} failed (${message(error)}); its poll tick follows`);
    }
  };

  const cancel = (runId: string) => {
    active.get(runId)?.controller.abort();
    active.delete(runId);
  };

  return {
    stats,
    watch(run, waiter) {
      if (closed) return;
      cancel(run.runId);
      // The poll's own tick comes before a watch could say more: no waiter to start and end.
      if (run.seconds < MIN_WATCHED_POLL_SECONDS) return;
      const controller = new AbortController();
      // Past the poll's delay its own tick is due: a waiter would watch for nobody.
      const signal = AbortSignal.any([
        controller.signal,
        AbortSignal.timeout(run.seconds * 1000 + 5000),
      ]);
      stats.started += 1;
      const entry = {
        controller,
        done: follow(run, waiter, signal).finally(() => {
          if (active.get(run.runId) === entry) active.delete(run.runId);
        }),
      };
      active.set(run.runId, entry);
    },
    cancel,
    async close() {
      closed = true;
      const ending = [...active.values()];
      for (const entry of ending) entry.controller.abort();
      active.clear();
      await Promise.all(ending.map((entry) => entry.done));
    },
    watching: () => [...active.keys()],
  };
}

/**
 * Moves the run's tick to now, only while the run still waits where the waiter watched: the
 * same step, no visit since (`step_visit`), and no tick holding the row (one that does decides
 * for itself). `next_tick_at` moves with it, so the wait before the tick starts counts as
 * overdue, not against the step's maxDuration.
 */
export async function wakeRun(db: Database, run: WaitingRun): Promise<boolean> {
  return db.transaction(async (tx) => {
    if ((await lockWaitingRun(tx, run)) === null) return false;
    const now = new Date();
    await tx.update(runs).set({ nextTickAt: now }).where(eq(runs.id, run.runId));
    await scheduleTick(tx, run.runId, now);
    return true;
  });
}

/**
 * The run still waits where the waiter watches (as `wakeRun` asks): its row locked `skip
 * locked`, so a tick that holds it decides for itself and nothing is written beside it.
 */
async function lockWaitingRun(tx: Transaction, run: WaitingRun) {
  const waiting = await tx.execute<{ host_id: string | null }>(sql`
    select host_id from runs
    where id = ${run.runId}::uuid and status = 'running'
      and current_step = ${run.step} and step_visit = ${run.visit}
    for no key update skip locked`);
  return waiting.rows[0] ?? null;
}

/**
 * A waiter's progress, written while the run still waits where it polled: the phase line (and
 * the live notification the fleet view patches its row from), and log lines with the followed
 * file's position, in one transaction. The next visit reads both as the waiter left them.
 */
export async function reportProgress(
  db: Database,
  run: WaitingRun,
  progress: Parameters<WaitProgress["report"]>[0],
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const waiting = await lockWaitingRun(tx, run);
    if (waiting === null) return false;
    if (progress.log !== undefined)
      await appendRunLog(tx, run.runId, progress.log.entries, { source: progress.log.source });
    if (progress.phase !== undefined) {
      await tx
        .update(runs)
        .set({ phase: progress.phase, updatedAt: new Date() })
        .where(eq(runs.id, run.runId));
      await notifyLive(tx, { type: "run", runId: run.runId, hostId: waiting.host_id });
    }
    return true;
  });
}

function message(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
}
