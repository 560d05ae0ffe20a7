import { pgTable, uuid, text, timestamp, bigserial, index } from "drizzle-orm/pg-core";
import { runs } from "./runs";

/** What the steps of a run said and ran, line by line, in order. */
export const runLogs = pgTable(
  "run_logs",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    step: text("step").notNull(),
    line: text("line").notNull(),
  },
  (t) => [index("run_logs_run_idx").on(t.runId, t.id)],
);
