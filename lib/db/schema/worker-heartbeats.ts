import { pgTable, text, integer, timestamp } from "drizzle-orm/pg-core";

/**
 * Liveness of graphile-worker workers. graphile-worker leaves a crashed worker's jobs locked for
 * four hours; lib/pipeline/recovery.ts unlocks the jobs of workers whose heartbeat stopped.
 */
export const workerHeartbeats = pgTable("worker_heartbeats", {
  workerId: text("worker_id").primaryKey(),
  hostname: text("hostname").notNull(),
  pid: integer("pid").notNull(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
  lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
});
