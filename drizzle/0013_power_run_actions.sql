CREATE TYPE "public"."power_action_outcome" AS ENUM('ok', 'failed', 'would-do', 'timed-out', 'unknown');--> statement-breakpoint
CREATE TABLE "power_run_actions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"lane" text NOT NULL,
	"label" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"outcome" "power_action_outcome",
	"detail" text,
	"request" text
);
--> statement-breakpoint
ALTER TABLE "power_run_actions" ADD CONSTRAINT "power_run_actions_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "power_run_actions_run" ON "power_run_actions" USING btree ("run_id","started_at");