import {
  pgTable,
  uuid,
  text,
  integer,
  timestamp,
  bigserial,
  pgEnum,
  index,
} from "drizzle-orm/pg-core";
import { runs } from "./runs";

export const visitOutcome = pgEnum("visit_outcome", ["advance", "poll", "fail", "error"]);

/** One visit of one step: the audit trail the step timeline is drawn from. */
export const stepVisits = pgTable(
  "step_visits",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    step: text("step").notNull(),
    visit: integer("visit").notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull(),
    finishedAt: timestamp("finished_at", { withTimezone: true }).notNull(),
    outcome: visitOutcome("outcome").notNull(),
    detail: text("detail"),
  },
  (t) => [index("step_visits_run_idx").on(t.runId, t.id)],
);
