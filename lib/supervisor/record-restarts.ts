import { lt } from "drizzle-orm";
import { createDb } from "@/lib/db/client";
import { consoleProcessRestarts } from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import { serialRerun } from "@/lib/live/serial-rerun";
import { notifyLive } from "@/lib/pipeline/schedule";
import type { RestartEvent } from "./supervisor";

/** Restarts kept for the pages; older ones live on in the log only. */
const KEEP_MS = 24 * 60 * 60_000;
/** Restarts held while the database does not answer; beyond that the oldest are dropped. */
const MAX_PENDING = 200;

export type RestartRecorder = {
  record(event: RestartEvent): void;
  /** Stops writing; restarts still waiting for the database are reported as lost. */
  close(): Promise<void>;
};

/**
 * Writes each restart to `console_process_restarts` and tells the open pages (live NOTIFY), so
 * a crash loop shows as a banner (crash-loops.ts). The database may be the process that just
 * died: a restart that cannot be written waits (bounded) and is written when the database
 * answers again, retried every `retryMs`. Recording never throws into the supervisor.
 */
export function createRestartRecorder(options: {
  databaseUrl: string;
  log(line: string): void;
  retryMs?: number;
}): RestartRecorder {
  const retryMs = options.retryMs ?? 2_000;
  const { pool, db } = createDb(options.databaseUrl, 1);
  let pending: RestartEvent[] = [];
  let dropped = 0;
  let failing = false;
  let closed = false;
  let retryTimer: NodeJS.Timeout | null = null;

  const pass = async () => {
    if (closed || pending.length === 0) return;
    const batch = pending;
    pending = [];
    try {
      await db.transaction(async (tx) => {
        await tx.insert(consoleProcessRestarts).values(
          batch.map((event) => ({
            process: event.service,
            endedAt: event.endedAt,
            ending: event.ending,
            upMs: event.upMs === null ? null : Math.min(event.upMs, 2 ** 31 - 1),
            restartDelayMs: event.delayMs,
          })),
        );
        await tx
          .delete(consoleProcessRestarts)
          .where(lt(consoleProcessRestarts.endedAt, new Date(Date.now() - KEEP_MS)));
        await notifyLive(tx, {
          type: "process-restart",
          process: batch[batch.length - 1]!.service,
        });
      });
      if (failing) {
        options.log(
          `recorded ${batch.length} restart(s) for the console's pages now that the database answers` +
            (dropped > 0 ? ` (${dropped} older one(s) were dropped while waiting)` : ""),
        );
      }
      failing = false;
      dropped = 0;
    } catch (error) {
      pending = [...batch, ...pending];
      if (pending.length > MAX_PENDING) {
        dropped += pending.length - MAX_PENDING;
        pending = pending.slice(-MAX_PENDING);
      }
      if (!failing) {
        options.log(
          `could not record a restart for the console's pages (${safeErrorSummary(error)}); ` +
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

  return {
    record(event) {
      if (closed) return;
      pending.push(event);
      void write();
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      if (pending.length > 0) {
        options.log(
          `${pending.length + dropped} restart(s) were never recorded for the console's pages: ` +
            `the database did not answer (the log above has them)`,
        );
      }
      await pool.end();
    },
  };
}
