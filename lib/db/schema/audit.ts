import {
  bigserial,
  index,
  jsonb,
  pgEnum,
  pgTable,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";

export const auditOutcome = pgEnum("audit_outcome", ["success", "failure", "denied"]);

/**
 * Who did what, to what, when, and how it ended. Append-only: the code has an insert path
 * (lib/audit/record-audit.ts) and read paths, nothing that updates or deletes a row.
 * The actor's name is copied, not only referenced, so the row still reads right after a
 * user is renamed or removed.
 */
export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    actorUserId: uuid("actor_user_id"),
    actorName: text("actor_name").notNull(),
    action: text("action").notNull(),
    target: text("target"),
    outcome: auditOutcome("outcome").notNull(),
    /** What the reader needs besides the target: never a secret. */
    detail: jsonb("detail").$type<Record<string, unknown>>(),
  },
  (t) => [
    index("audit_log_at_idx").on(t.at),
    index("audit_log_action_idx").on(t.action, t.at),
    index("audit_log_actor_idx").on(t.actorName, t.at),
  ],
);
