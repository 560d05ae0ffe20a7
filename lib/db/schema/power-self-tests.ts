import { sql } from "drizzle-orm";
import { check, index, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import type { SelfTestCheck } from "@/lib/power/self-test/verdict";

export const powerSelfTestVerdict = pgEnum("power_self_test_verdict", [
  "ok",
  "warning",
  "failed",
  "could-not-check",
]);
/** What started it: the worker's schedule, an admin arming, a worker starting, or a person. */
export const powerSelfTestOccasion = pgEnum("power_self_test_occasion", [
  "schedule",
  "armed",
  "start-up",
  "button",
]);

/**
 * One self-test of the shutdown path: every check with its verdict, reason and next step — or,
 * when it met an outage, only why it did not run (`skipped_reason`, no verdict).
 */
export const powerSelfTests = pgTable(
  "power_self_tests",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    occasion: powerSelfTestOccasion("occasion").notNull(),
    /** The person who pressed the button or armed; null for the worker's own occasions. */
    requestedBy: text("requested_by"),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull(),
    finishedAt: timestamp("finished_at", { withTimezone: true }).notNull().defaultNow(),
    verdict: powerSelfTestVerdict("verdict"),
    skippedReason: text("skipped_reason"),
    checks: jsonb("checks").$type<SelfTestCheck[]>().notNull().default([]),
  },
  (t) => [
    index("power_self_tests_finished_idx").on(t.finishedAt),
    check(
      "power_self_tests_verdict_or_skipped",
      sql`(${t.verdict} is null) <> (${t.skippedReason} is null)`,
    ),
  ],
);
