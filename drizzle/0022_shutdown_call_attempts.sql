DROP INDEX "power_shutdown_calls_run_target";--> statement-breakpoint
DROP INDEX "power_shutdown_calls_one_real_call";--> statement-breakpoint
ALTER TABLE "power_shutdown_calls" ADD COLUMN "attempt" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "power_shutdown_calls" ADD COLUMN "deadline_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "power_shutdown_calls" ADD COLUMN "seen_down_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "power_shutdown_calls_run_target_attempt" ON "power_shutdown_calls" USING btree ("run_id","target_id","attempt");--> statement-breakpoint
CREATE UNIQUE INDEX "power_shutdown_calls_one_accepted_call" ON "power_shutdown_calls" USING btree ("target_id","due_since") WHERE "power_shutdown_calls"."state" in ('sending', 'sent');