import { lt } from "drizzle-orm";
import { createDb } from "@/lib/db/client";
import { consoleProcessRestarts } from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import { serialRerun } from "@/lib/live/serial-rerun";
import { notifyLive } from "@/lib/live/notify";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import { crashLoopPowerEvent } from "./crash-loop-events";
import type { CrashLoopEvent, RestartEvent } from "./supervisor";

/** Restarts kept for the pages; older ones live on in the log only. */
const KEEP_MS = 24 * 60 * 60_000;
/**
 * Restarts held while the database does not answer; beyond that the oldest are dropped. A crash
 * loop's beginning and end are never dropped (two per loop).
 */
const MAX_PENDING = 200;

export type RestartRecorder = {
  record(event: RestartEvent): void;
  recordCrashLoop(event: CrashLoopEvent): void;
  /** Stops writing; what still waits for the database is reported as lost. */
  close(): Promise<void>;
};

type Pending = { restart: RestartEvent } | { crashLoop: CrashLoopEvent };

/**
 * Writes each restart to `console_process_restarts` and tells the open pages (live NOTIFY), so
 * a crash loop shows as a banner (crash-loops.ts); a crash loop's beginning and end become power
 * events (`console.crash_loop`, `console.crash_loop_over`), queued for every webhook target that
 * wants them in the same transaction (lib/notify). The supervisor runs in npm start's process,
 * the deliveries in a worker: a delivery waits in the queue until a worker runs — so the crash
 * loop of the worker itself is told as soon as one stays up. The database may be the process
 * that just died: what cannot be written waits (bounded) and is written, in order, when the
 * database answers again, retried every `retryMs` — a database's crash loop is recorded (and
 * told) once it is back, with the moment it began. Recording never throws into the supervisor.
 */
export function createRestartRecorder(options: {
  databaseUrl: string;
  log(line: string): void;
  retryMs?: number;
}): RestartRecorder {
  const retryMs = options.retryMs ?? 2_000;
  const { pool, db } = createDb(options.databaseUrl, 1);
  let pending: Pending[] = [];
  let dropped = 0;
  let failing = false;
  let closed = false;
  let retryTimer: NodeJS.Timeout | null = null;

  const pass = async () => {
    if (closed || pending.length === 0) return;
    const batch = pending;
    pending = [];
    const restarts = batch.flatMap((p) => ("restart" in p ? [p.restart] : []));
    const crashLoops = batch.flatMap((p) => ("crashLoop" in p ? [p.crashLoop] : []));
    try {
      await db.transaction(async (tx) => {
        if (restarts.length > 0) {
          await tx.insert(consoleProcessRestarts).values(
            restarts.map((event) => ({
              process: event.service,
              endedAt: event.endedAt,
              ending: event.ending,
              upMs: event.upMs === null ? null : Math.min(event.upMs, 2 ** 31 - 1),
              restartDelayMs: event.delayMs,
            })),
          );
          await notifyLive(tx, {
            type: "process-restart",
            process: restarts[restarts.length - 1]!.service,
          });
        }
        await tx
          .delete(consoleProcessRestarts)
          .where(lt(consoleProcessRestarts.endedAt, new Date(Date.now() - KEEP_MS)));
        // After the restarts that made them: in order, as the log says them.
        await recordPowerEvents(tx, crashLoops.map(crashLoopPowerEvent));
      });
      if (failing) {
        options.log(
          `recorded ${describe(restarts.length, crashLoops.length)} for the console's pages now that the database answers` +
            (dropped > 0 ? ` (${dropped} older restart(s) were dropped while waiting)` : ""),
        );
      }
      failing = false;
      dropped = 0;
    } catch (error) {
      pending = [...batch, ...pending];
      const excess = pending.filter((p) => "restart" in p).length - MAX_PENDING;
      if (excess > 0) {
        let left = excess;
        pending = pending.filter((p) => !("restart" in p) || left-- <= 0);
        dropped += excess;
      }
      if (!failing) {
        options.log(
          `could not record ${describe(restarts.length, crashLoops.length)} for the console's pages (${safeErrorSummary(error)}); ` +
            `retrying every ${retryMs / 1_000} s until the database answers`,
        );
      }
      failing = true;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = setTimeout(() => {
        retryTimer = null;
        void write();
      }, retryMs);
    }
  };
  const write = serialRerun(pass, () => closed);

  const queue = (item: Pending) => {
    if (closed) return;
    pending.push(item);
    void write();
  };
  return {
    record: (event) => queue({ restart: event }),
    recordCrashLoop: (event) => queue({ crashLoop: event }),
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      if (pending.length > 0) {
        const restarts = pending.filter((p) => "restart" in p).length + dropped;
        options.log(
          `${describe(restarts, pending.length + dropped - restarts)} never recorded for the console's pages ` +
            `nor notified: the database did not answer (the log above has them)`,
        );
      }
      await pool.end();
    },
  };
}

/** `1 restart(s)`, `2 restart(s) and a crash loop's beginning or end`, … */
function describe(restarts: number, crashLoops: number): string {
  const parts = [
    ...(restarts > 0 || crashLoops === 0 ? [`${restarts} restart(s)`] : []),
    ...(crashLoops > 0 ? [`${crashLoops} crash loop change(s)`] : []),
  ];
  return parts.join(" and ");
}
