ALTER TABLE "ups_monitor_state" ADD COLUMN "consolidate_latches" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "power_clusters" ADD COLUMN "consolidate" jsonb;--> statement-breakpoint
ALTER TABLE "power_clusters" ADD COLUMN "consolidate_check" jsonb;