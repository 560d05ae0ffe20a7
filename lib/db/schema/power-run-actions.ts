import { bigserial, index, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { runs } from "./runs";

/**
 * ok: done and verified; failed: refused or not verified; would-do: dry-run, nothing sent;
 * timed-out: its deadline passed without an answer; unknown: may have happened (the worker died
 * mid-call, or the read-back could not tell).
 */
export const powerActionOutcome = pgEnum("power_action_outcome", [
  "ok",
  "failed",
  "would-do",
  "timed-out",
  "unknown",
]);

/**
 * Every action a power run takes, one row per action, for the timeline: a lane per node (or
 * "cluster" for cluster-wide calls), a bar from started_at to finished_at. The start is committed
 * before the action goes out, so a row without finished_at is an action still in flight — or
 * one whose worker died mid-call.
 */
export const powerRunActions = pgTable(
  "power_run_actions",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    /** A node name, or "cluster" for calls that act on the whole cluster. */
    lane: text("lane").notNull(),
    /** What it does, short: "disarm HA", "stop guests", "set Ceph flags", "shutdown pve2". */
    label: text("label").notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    /** Null while the action is in flight. */
    outcome: powerActionOutcome("outcome"),
    detail: text("detail"),
    /** The exact request(s), secrets masked. */
    request: text("request"),
  },
  (t) => [index("power_run_actions_run").on(t.runId, t.startedAt)],
);
