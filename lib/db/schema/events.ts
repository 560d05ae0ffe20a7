import { sql } from "drizzle-orm";
import { pgTable, uuid, text, timestamp, bigserial, jsonb, index } from "drizzle-orm/pg-core";
import { runs } from "./runs";
import { hosts } from "./hosts";

/** Append-only log of what happened: operator actions and engine milestones. */
export const events = pgTable(
  "events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    // The insert's own clock, not its transaction's start: an engine tick holds its transaction
    // for the whole visit, and its events must not read older than ones committed meanwhile
    // (issue 19: "abort requested 08:07:58" above "ConfigureProxmox done 08:07:54").
    at: timestamp("at", { withTimezone: true })
      .notNull()
      .default(sql`clock_timestamp()`),
    hostId: uuid("host_id").references(() => hosts.id),
    runId: uuid("run_id").references(() => runs.id),
    kind: text("kind").notNull(),
    actor: text("actor").notNull(),
    message: text("message").notNull(),
    data: jsonb("data").$type<Record<string, unknown>>(),
  },
  (t) => [index("events_run_idx").on(t.runId, t.id), index("events_host_idx").on(t.hostId, t.id)],
);
