CREATE TYPE "public"."notification_delivery_state" AS ENUM('pending', 'delivered', 'failed', 'acknowledged');--> statement-breakpoint
CREATE TYPE "public"."notification_format" AS ENUM('slack', 'discord', 'ntfy', 'teams', 'json', 'text', 'template');--> statement-breakpoint
CREATE TYPE "public"."notification_template_escape" AS ENUM('json', 'none');--> statement-breakpoint
CREATE TABLE "notification_deliveries" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"target_id" uuid NOT NULL,
	"power_event_id" bigint,
	"run_event_id" bigint,
	"kind" text NOT NULL,
	"severity" "power_event_severity" NOT NULL,
	"state" "notification_delivery_state" DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_status" integer,
	"last_error" text,
	"next_attempt_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"delivered_at" timestamp with time zone,
	"acknowledged_at" timestamp with time zone,
	"acknowledged_by" text,
	CONSTRAINT "notification_deliveries_one_event" CHECK (("notification_deliveries"."power_event_id" is null) <> ("notification_deliveries"."run_event_id" is null))
);
--> statement-breakpoint
CREATE TABLE "notification_targets" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"format" "notification_format" NOT NULL,
	"sealed_url" text NOT NULL,
	"url_origin" text NOT NULL,
	"template" text,
	"template_escape" "notification_template_escape" DEFAULT 'json' NOT NULL,
	"template_content_type" text,
	"min_severity" "power_event_severity" DEFAULT 'warning' NOT NULL,
	"event_kinds" text[] DEFAULT '{}'::text[] NOT NULL,
	"auth_header_name" text,
	"sealed_auth_header_value" text,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "notification_targets_name_unique" UNIQUE("name")
);
--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_target_id_notification_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."notification_targets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_power_event_id_power_events_id_fk" FOREIGN KEY ("power_event_id") REFERENCES "public"."power_events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_run_event_id_events_id_fk" FOREIGN KEY ("run_event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notification_deliveries_target_idx" ON "notification_deliveries" USING btree ("target_id","id");--> statement-breakpoint
CREATE INDEX "notification_deliveries_power_event_idx" ON "notification_deliveries" USING btree ("power_event_id");--> statement-breakpoint
CREATE INDEX "notification_deliveries_failed_idx" ON "notification_deliveries" USING btree ("target_id") WHERE "notification_deliveries"."state" = 'failed';