CREATE TYPE "public"."power_back_guest_state" AS ENUM('running', 'unknown');--> statement-breakpoint
CREATE TABLE "power_back_guests" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"due_since" timestamp with time zone NOT NULL,
	"target_id" uuid,
	"cluster_id" uuid,
	"node" text NOT NULL,
	"state" "power_back_guest_state" NOT NULL,
	"vmid" integer,
	"type" text,
	"name" text,
	"startup_order" integer,
	"up_seconds" integer,
	"ha_managed" boolean,
	"problem" text,
	"mode" text NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "power_back_guests_one_per_run" UNIQUE NULLS NOT DISTINCT("run_id","node","vmid")
);
--> statement-breakpoint
ALTER TABLE "power_settings" ADD COLUMN "power_back" jsonb DEFAULT '{"mainsStableMinutes":5,"minChargePercent":50}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "power_back_guests" ADD CONSTRAINT "power_back_guests_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_back_guests" ADD CONSTRAINT "power_back_guests_target_id_power_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."power_targets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_back_guests" ADD CONSTRAINT "power_back_guests_cluster_id_power_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."power_clusters"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "power_back_guests_outage" ON "power_back_guests" USING btree ("due_since");