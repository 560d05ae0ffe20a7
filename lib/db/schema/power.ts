import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import type { PowerPlanSnapshot } from "@/lib/power/config/armed-plan-snapshot";
import type { PublicUpsSource } from "@/lib/power/config/ups-source-config";
import type {
  MonotonicDurations,
  ReadingRecord,
  StoredLatch,
  StoredPending,
} from "@/lib/power/triggers/state";
import type {
  PowerBackSettings,
  ShedSettings,
  ShutdownSettings,
  TriggerOverrides,
  TriggerSettings,
} from "@/lib/power/config/settings";
import { credentials } from "./credentials";
import { hosts } from "./hosts";
import { runs } from "./runs";

export const powerMode = pgEnum("power_mode", ["dry-run", "armed"]);
export const powerTargetKind = pgEnum("power_target_kind", ["pve-node", "pbs"]);
/** all: only when every feed fails (redundant power supplies); any: when one feed fails. */
export const powerFeedPolicy = pgEnum("power_feed_policy", ["all", "any"]);
export const powerEventSeverity = pgEnum("power_event_severity", ["info", "warning", "critical"]);
/**
 * would_send: dry-run, nothing left the console. sending: claimed before the call went out;
 * a row still `sending` after its worker died becomes `unknown` (sent, outcome unknown) and is
 * never sent again.
 */
export const powerCallState = pgEnum("power_call_state", [
  "would_send",
  "sending",
  "sent",
  "failed",
  "unknown",
]);

/** A UPS the console watches. Secrets (NUT password, SNMP community or v3 keys) are sealed apart. */
export const upsDevices = pgTable("ups_devices", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull().unique(),
  /** The source settings without their secrets (lib/power/config/ups-source-config.ts). */
  source: jsonb("source").$type<PublicUpsSource>().notNull(),
  /** Sealed JSON of the source's secret fields; null when it has none. */
  secretCredentialId: uuid("secret_credential_id").references(() => credentials.id),
  /** This UPS's deviations from the global trigger defaults. */
  triggerOverrides: jsonb("trigger_overrides").$type<TriggerOverrides>().notNull().default({}),
  /**
   * Opt-in (off by default): once a shutdown run has seen every target fed by this UPS down and
   * the UPS is still on battery, ask it to turn its output off and on again when mains returns
   * (NUT `INSTCMD <ups> shutdown.return`), so hosts set to power on after AC loss come back.
   * lib/power/shutdown/cycle-ups-output.ts.
   */
  outputCycle: boolean("output_cycle").notNull().default(false),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** The one row of power settings (id 1); absent = the defaults of lib/power/config/settings.ts. */
export const powerSettings = pgTable(
  "power_settings",
  {
    id: integer("id").primaryKey().default(1),
    mode: powerMode("mode").notNull().default("dry-run"),
    armedAt: timestamp("armed_at", { withTimezone: true }),
    armedBy: text("armed_by"),
    /** The plan as it stood when armed, so a later change can be shown against it. */
    armedPlan: jsonb("armed_plan").$type<PowerPlanSnapshot>(),
    triggers: jsonb("triggers").$type<TriggerSettings>().notNull(),
    pollIntervalMs: integer("poll_interval_ms").notNull().default(1000),
    shutdown: jsonb("shutdown").$type<ShutdownSettings>().notNull(),
    /** When the fleet comes back by itself (lib/power/power-back/policy.ts). */
    powerBack: jsonb("power_back")
      .$type<PowerBackSettings>()
      .notNull()
      .default({ mainsStableMinutes: 5, minChargePercent: 50 }),
    /** Early load shedding (lib/power/shed/); off until an admin turns it on. */
    shed: jsonb("shed")
      .$type<ShedSettings>()
      .notNull()
      .default({ enabled: false, afterMinutes: 2, tag: "shed", guests: [] }),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check("power_settings_one_row", sql`${t.id} = 1`)],
);

/**
 * Something the console shuts down: an onboarded Proxmox VE node (its address, node name, token
 * and pinned certificate live on the host), or a Proxmox Backup Server with its own.
 */
export const powerTargets = pgTable(
  "power_targets",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    kind: powerTargetKind("kind").notNull(),
    /** pve-node: the onboarded host. Deleting the host (retired first) ends its protection. */
    hostId: uuid("host_id")
      .unique()
      .references(() => hosts.id, { onDelete: "cascade" }),
    /** pbs: its own name, address and API port. */
    name: text("name").unique(),
    address: text("address"),
    port: integer("port"),
    /** pbs: `user@realm!tokenid`; the secret is a sealed credential. */
    tokenId: text("token_id"),
    tokenCredentialId: uuid("token_credential_id").references(() => credentials.id),
    /** pbs: SHA-256 of its TLS certificate, `AB:CD:…`. */
    certSha256: text("cert_sha256"),
    feedPolicy: powerFeedPolicy("feed_policy").notNull(),
    /** Lower stages are shut down first. */
    stage: integer("stage").notNull().default(0),
    /** The host the console itself runs on: always last. Marked by an admin, never guessed. */
    runsConsole: boolean("runs_console").notNull().default(false),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("power_targets_one_console_host")
      .on(t.runsConsole)
      .where(sql`${t.runsConsole}`),
    check(
      "power_targets_kind_fields",
      sql`(${t.kind} = 'pve-node' and ${t.hostId} is not null)
        or (${t.kind} = 'pbs' and ${t.hostId} is null and ${t.name} is not null
            and ${t.address} is not null and ${t.port} is not null and ${t.tokenId} is not null
            and ${t.tokenCredentialId} is not null and ${t.certSha256} is not null)`,
    ),
  ],
);

/** Which UPS devices feed a target. */
export const powerTargetFeeds = pgTable(
  "power_target_feeds",
  {
    targetId: uuid("target_id")
      .notNull()
      .references(() => powerTargets.id, { onDelete: "cascade" }),
    upsId: uuid("ups_id")
      .notNull()
      .references(() => upsDevices.id),
  },
  (t) => [
    primaryKey({ columns: [t.targetId, t.upsId] }),
    index("power_target_feeds_ups_idx").on(t.upsId),
  ],
);

/**
 * What the monitor knows about one UPS, surviving worker restarts: the lease (exactly one monitor
 * per UPS across worker processes), the last reliable reading, the console's own on-battery
 * clock, the latch and the alarm.
 */
export const upsMonitorState = pgTable("ups_monitor_state", {
  upsId: uuid("ups_id")
    .primaryKey()
    .references(() => upsDevices.id, { onDelete: "cascade" }),
  leaseOwner: text("lease_owner"),
  leaseUntil: timestamp("lease_until", { withTimezone: true }),
  /** The last reliable reading. */
  lastReading: jsonb("last_reading").$type<ReadingRecord>(),
  lastReadingAt: timestamp("last_reading_at", { withTimezone: true }),
  /** null: never asked yet. */
  reachable: boolean("reachable"),
  /** Set by the console's clock on the mains→battery transition; never from the UPS's counter. */
  onBatterySince: timestamp("on_battery_since", { withTimezone: true }),
  mainsSince: timestamp("mains_since", { withTimezone: true }),
  latchedTrigger: text("latched_trigger"),
  latchedAt: timestamp("latched_at", { withTimezone: true }),
  latchedReason: text("latched_reason"),
  /** The reading that fired the trigger (null for the lost-contact trigger). */
  latchedReading: jsonb("latched_reading").$type<ReadingRecord>(),
  /** Mains came back since the latch fired: it demands nothing until a trigger holds afresh. */
  latchDormant: boolean("latch_dormant").notNull().default(false),
  /**
   * What the decisions count with, by the console's monotonic clock (on battery for, stable
   * mains for, without contact for); the `…_since` columns are the wall clock, for display.
   */
  durations: jsonb("durations")
    .$type<MonotonicDurations>()
    .notNull()
    .default({ onBatteryMs: null, mainsMs: null, alarmMs: null }),
  /** Trigger rows firing but not confirmed yet, by "trigger" or a consolidating cluster's id. */
  pendingTriggers: jsonb("pending_triggers")
    .$type<Record<string, StoredPending>>()
    .notNull()
    .default({}),
  /**
   * The first thresholds of consolidating clusters this UPS feeds that fired in this outage,
   * by cluster id: latched and released like the trigger (lib/power/triggers/decide.ts).
   */
  consolidateLatches: jsonb("consolidate_latches")
    .$type<Record<string, StoredLatch>>()
    .notNull()
    .default({}),
  /** Set while the UPS gives no reliable reading. */
  alarmSince: timestamp("alarm_since", { withTimezone: true }),
  alarmReason: text("alarm_reason"),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * Compact reading history for the chart: every reading on battery or with a change of status,
 * at most one per 10 s on steady mains; the monitor prunes old rows.
 */
export const upsReadings = pgTable(
  "ups_readings",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    upsId: uuid("ups_id")
      .notNull()
      .references(() => upsDevices.id, { onDelete: "cascade" }),
    at: timestamp("at", { withTimezone: true }).notNull(),
    reachable: boolean("reachable").notNull(),
    onBattery: boolean("on_battery"),
    lowBattery: boolean("low_battery"),
    chargePercent: real("charge_percent"),
    runtimeSeconds: integer("runtime_seconds"),
  },
  (t) => [index("ups_readings_ups_at_idx").on(t.upsId, t.at)],
);

/** The power event log: transitions, alarms, triggers, shutdown calls and mode changes. */
export const powerEvents = pgTable(
  "power_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    severity: powerEventSeverity("severity").notNull(),
    kind: text("kind").notNull(),
    upsId: uuid("ups_id").references(() => upsDevices.id, { onDelete: "set null" }),
    targetId: uuid("target_id").references(() => powerTargets.id, { onDelete: "set null" }),
    runId: uuid("run_id").references(() => runs.id, { onDelete: "set null" }),
    message: text("message").notNull(),
    /** Never a secret. */
    data: jsonb("data").$type<Record<string, unknown>>(),
    acknowledgedAt: timestamp("acknowledged_at", { withTimezone: true }),
    acknowledgedBy: text("acknowledged_by"),
  },
  (t) => [index("power_events_at_idx").on(t.at), index("power_events_ups_idx").on(t.upsId, t.id)],
);

/**
 * One row per target per shutdown run: what was (or would have been) sent, claimed before the
 * call goes out. The partial unique index makes "one real shutdown call per target per outage"
 * a database fact, whatever runs or workers race.
 */
export const powerShutdownCalls = pgTable(
  "power_shutdown_calls",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    targetId: uuid("target_id")
      .notNull()
      .references(() => powerTargets.id, { onDelete: "cascade" }),
    /** When the target became due in this outage (its latch epoch). */
    dueSince: timestamp("due_since", { withTimezone: true }).notNull(),
    /** 1 for the run's first call of the target; a failed or unanswered one is sent again. */
    attempt: integer("attempt").notNull().default(1),
    state: powerCallState("state").notNull(),
    /** The exact request, secret masked: `POST https://…/api2/json/nodes/pve1/status command=shutdown`. */
    request: text("request").notNull(),
    detail: text("detail"),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
    /**
     * The call's own hard deadline. A claim still `sending` well after it was written by a
     * worker that died: it is settled as `unknown` (it may have arrived) and sent again.
     */
    deadlineAt: timestamp("deadline_at", { withTimezone: true }),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    /** The target was seen down after this call (its API stopped answering). */
    seenDownAt: timestamp("seen_down_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("power_shutdown_calls_run_target_attempt").on(t.runId, t.targetId, t.attempt),
    // At most one call per target per outage in flight or accepted, across runs: a failed or
    // unanswered call is sent again, an accepted one never (docs/power.md, "Calls").
    uniqueIndex("power_shutdown_calls_one_accepted_call")
      .on(t.targetId, t.dueSince)
      .where(sql`${t.state} in ('sending', 'sent')`),
  ],
);
