CREATE TYPE "public"."power_call_state" AS ENUM('would_send', 'sending', 'sent', 'failed', 'unknown');--> statement-breakpoint
CREATE TYPE "public"."power_event_severity" AS ENUM('info', 'warning', 'critical');--> statement-breakpoint
CREATE TYPE "public"."power_feed_policy" AS ENUM('all', 'any');--> statement-breakpoint
CREATE TYPE "public"."power_mode" AS ENUM('dry-run', 'armed');--> statement-breakpoint
CREATE TYPE "public"."power_target_kind" AS ENUM('pve-node', 'pbs');--> statement-breakpoint
ALTER TYPE "public"."credential_kind" ADD VALUE 'ups_secret';--> statement-breakpoint
CREATE TABLE "power_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"severity" "power_event_severity" NOT NULL,
	"kind" text NOT NULL,
	"ups_id" uuid,
	"target_id" uuid,
	"run_id" uuid,
	"message" text NOT NULL,
	"data" jsonb,
	"acknowledged_at" timestamp with time zone,
	"acknowledged_by" text
);
--> statement-breakpoint
CREATE TABLE "power_settings" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"mode" "power_mode" DEFAULT 'dry-run' NOT NULL,
	"armed_at" timestamp with time zone,
	"armed_by" text,
	"armed_plan" jsonb,
	"triggers" jsonb NOT NULL,
	"poll_interval_ms" integer DEFAULT 1000 NOT NULL,
	"shutdown" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "power_settings_one_row" CHECK ("power_settings"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "power_shutdown_calls" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"target_id" uuid NOT NULL,
	"due_since" timestamp with time zone NOT NULL,
	"state" "power_call_state" NOT NULL,
	"request" text NOT NULL,
	"detail" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "power_target_feeds" (
	"target_id" uuid NOT NULL,
	"ups_id" uuid NOT NULL,
	CONSTRAINT "power_target_feeds_target_id_ups_id_pk" PRIMARY KEY("target_id","ups_id")
);
--> statement-breakpoint
CREATE TABLE "power_targets" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"kind" "power_target_kind" NOT NULL,
	"host_id" uuid,
	"name" text,
	"address" text,
	"port" integer,
	"token_id" text,
	"token_credential_id" uuid,
	"cert_sha256" text,
	"feed_policy" "power_feed_policy" NOT NULL,
	"stage" integer DEFAULT 0 NOT NULL,
	"runs_console" boolean DEFAULT false NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "power_targets_host_id_unique" UNIQUE("host_id"),
	CONSTRAINT "power_targets_name_unique" UNIQUE("name"),
	CONSTRAINT "power_targets_kind_fields" CHECK (("power_targets"."kind" = 'pve-node' and "power_targets"."host_id" is not null)
        or ("power_targets"."kind" = 'pbs' and "power_targets"."host_id" is null and "power_targets"."name" is not null
            and "power_targets"."address" is not null and "power_targets"."port" is not null and "power_targets"."token_id" is not null
            and "power_targets"."token_credential_id" is not null and "power_targets"."cert_sha256" is not null))
);
--> statement-breakpoint
CREATE TABLE "ups_devices" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"source" jsonb NOT NULL,
	"secret_credential_id" uuid,
	"trigger_overrides" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ups_devices_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "ups_monitor_state" (
	"ups_id" uuid PRIMARY KEY NOT NULL,
	"lease_owner" text,
	"lease_until" timestamp with time zone,
	"last_reading" jsonb,
	"last_reading_at" timestamp with time zone,
	"reachable" boolean,
	"on_battery_since" timestamp with time zone,
	"mains_since" timestamp with time zone,
	"latched_trigger" text,
	"latched_at" timestamp with time zone,
	"latched_reason" text,
	"latched_reading" jsonb,
	"alarm_since" timestamp with time zone,
	"alarm_reason" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ups_readings" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"ups_id" uuid NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"reachable" boolean NOT NULL,
	"on_battery" boolean,
	"low_battery" boolean,
	"charge_percent" real,
	"runtime_seconds" integer
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "tick_task" text DEFAULT 'run-tick' NOT NULL;--> statement-breakpoint
ALTER TABLE "power_events" ADD CONSTRAINT "power_events_ups_id_ups_devices_id_fk" FOREIGN KEY ("ups_id") REFERENCES "public"."ups_devices"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_events" ADD CONSTRAINT "power_events_target_id_power_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."power_targets"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_events" ADD CONSTRAINT "power_events_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_shutdown_calls" ADD CONSTRAINT "power_shutdown_calls_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_shutdown_calls" ADD CONSTRAINT "power_shutdown_calls_target_id_power_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."power_targets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_target_feeds" ADD CONSTRAINT "power_target_feeds_target_id_power_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."power_targets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_target_feeds" ADD CONSTRAINT "power_target_feeds_ups_id_ups_devices_id_fk" FOREIGN KEY ("ups_id") REFERENCES "public"."ups_devices"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_targets" ADD CONSTRAINT "power_targets_host_id_hosts_id_fk" FOREIGN KEY ("host_id") REFERENCES "public"."hosts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_targets" ADD CONSTRAINT "power_targets_token_credential_id_credentials_id_fk" FOREIGN KEY ("token_credential_id") REFERENCES "public"."credentials"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ups_devices" ADD CONSTRAINT "ups_devices_secret_credential_id_credentials_id_fk" FOREIGN KEY ("secret_credential_id") REFERENCES "public"."credentials"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ups_monitor_state" ADD CONSTRAINT "ups_monitor_state_ups_id_ups_devices_id_fk" FOREIGN KEY ("ups_id") REFERENCES "public"."ups_devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ups_readings" ADD CONSTRAINT "ups_readings_ups_id_ups_devices_id_fk" FOREIGN KEY ("ups_id") REFERENCES "public"."ups_devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "power_events_at_idx" ON "power_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "power_events_ups_idx" ON "power_events" USING btree ("ups_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "power_shutdown_calls_run_target" ON "power_shutdown_calls" USING btree ("run_id","target_id");--> statement-breakpoint
CREATE UNIQUE INDEX "power_shutdown_calls_one_real_call" ON "power_shutdown_calls" USING btree ("target_id","due_since") WHERE "power_shutdown_calls"."state" <> 'would_send';--> statement-breakpoint
CREATE INDEX "power_target_feeds_ups_idx" ON "power_target_feeds" USING btree ("ups_id");--> statement-breakpoint
CREATE UNIQUE INDEX "power_targets_one_console_host" ON "power_targets" USING btree ("runs_console") WHERE "power_targets"."runs_console";--> statement-breakpoint
CREATE INDEX "ups_readings_ups_at_idx" ON "ups_readings" USING btree ("ups_id","at");