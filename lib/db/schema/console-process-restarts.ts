import { bigserial, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Every time `npm start`'s supervisor restarted one of the console's own processes (the worker,
 * the web server, the embedded database) because it ended by itself. The console's pages read
 * the last minutes of it to show a crash loop as a banner (lib/supervisor/crash-loops.ts); the
 * supervisor prunes rows older than a day, the log keeps the full story.
 */
export const consoleProcessRestarts = pgTable(
  "console_process_restarts",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    /** "worker", "web server" or "database" (the supervisor's service names). */
    process: text("process").notNull(),
    endedAt: timestamp("ended_at", { withTimezone: true }).notNull(),
    /** How it ended, in words: "killed by SIGKILL", "exit code 1", "could not start: …". */
    ending: text("ending").notNull(),
    /** How long it had been running (null: it never started). */
    upMs: integer("up_ms"),
    /** The backoff the supervisor waited before starting it again. */
    restartDelayMs: integer("restart_delay_ms").notNull(),
  },
  (t) => [index("console_process_restarts_ended_idx").on(t.endedAt)],
);
