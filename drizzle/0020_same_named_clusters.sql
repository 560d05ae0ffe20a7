ALTER TABLE "power_clusters" DROP CONSTRAINT "power_clusters_name_unique";--> statement-breakpoint
ALTER TABLE "power_clusters" ADD COLUMN "membership" jsonb;