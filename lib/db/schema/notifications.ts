import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  check,
  index,
  integer,
  pgEnum,
  pgTable,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { events } from "./events";
import { powerEventSeverity, powerEvents } from "./power";

export const notificationFormat = pgEnum("notification_format", [
  "slack",
  "discord",
  "ntfy",
  "teams",
  "json",
  "text",
  "template",
]);

/** How a custom template's placeholders are escaped: inside a JSON string, or not at all. */
export const notificationTemplateEscape = pgEnum("notification_template_escape", ["json", "none"]);

export const notificationDeliveryState = pgEnum("notification_delivery_state", [
  "pending",
  "delivered",
  "failed",
  "acknowledged",
]);

/**
 * A webhook the console tells about power and onboarding events. The URL is sealed like the
 * auth header: a Slack, Discord or Teams webhook URL is itself the credential. `urlOrigin`
 * (scheme, host, port) is what the pages show.
 */
export const notificationTargets = pgTable("notification_targets", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull().unique(),
  format: notificationFormat("format").notNull(),
  sealedUrl: text("sealed_url").notNull(),
  urlOrigin: text("url_origin").notNull(),
  /** The body of a `template` target (mustache). */
  template: text("template"),
  templateEscape: notificationTemplateEscape("template_escape").notNull().default("json"),
  templateContentType: text("template_content_type"),
  minSeverity: powerEventSeverity("min_severity").notNull().default("warning"),
  /** Event kinds (`ups.on_battery`) or families (`ups.*`) sent; empty means every kind. */
  eventKinds: text("event_kinds")
    .array()
    .notNull()
    .default(sql`'{}'::text[]`),
  authHeaderName: text("auth_header_name"),
  sealedAuthHeaderValue: text("sealed_auth_header_value"),
  enabled: boolean("enabled").notNull().default(true),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * One event sent to one target: created with the event, in its transaction, with its worker job
 * (lib/notify/enqueue.ts). `kind` and `severity` are the notification's, fixed at enqueue.
 */
export const notificationDeliveries = pgTable(
  "notification_deliveries",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    targetId: uuid("target_id")
      .notNull()
      .references(() => notificationTargets.id, { onDelete: "cascade" }),
    powerEventId: bigint("power_event_id", { mode: "number" }).references(() => powerEvents.id, {
      onDelete: "cascade",
    }),
    runEventId: bigint("run_event_id", { mode: "number" }).references(() => events.id, {
      onDelete: "cascade",
    }),
    kind: text("kind").notNull(),
    severity: powerEventSeverity("severity").notNull(),
    state: notificationDeliveryState("state").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    /** When the next attempt is due; null once delivered, acknowledged or out of attempts. */
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true }),
    deliveredAt: timestamp("delivered_at", { withTimezone: true }),
    acknowledgedAt: timestamp("acknowledged_at", { withTimezone: true }),
    acknowledgedBy: text("acknowledged_by"),
  },
  (t) => [
    index("notification_deliveries_target_idx").on(t.targetId, t.id),
    index("notification_deliveries_power_event_idx").on(t.powerEventId),
    index("notification_deliveries_failed_idx")
      .on(t.targetId)
      .where(sql`${t.state} = 'failed'`),
    check(
      "notification_deliveries_one_event",
      sql`(${t.powerEventId} is null) <> (${t.runEventId} is null)`,
    ),
  ],
);
