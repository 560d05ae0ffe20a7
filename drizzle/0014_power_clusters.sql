CREATE TYPE "public"."power_cluster_policy" AS ENUM('cluster', 'per-host', 'consolidate');--> statement-breakpoint
CREATE TABLE "power_cluster_memberships" (
	"host_id" uuid PRIMARY KEY NOT NULL,
	"cluster_id" uuid,
	"checked_at" timestamp with time zone,
	"ask_error" text,
	"asked_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "power_clusters" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"policy" "power_cluster_policy" DEFAULT 'cluster' NOT NULL,
	"hyper_converged" boolean DEFAULT false NOT NULL,
	"quorate" boolean,
	"nodes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"refreshed_at" timestamp with time zone,
	"refresh_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "power_clusters_name_unique" UNIQUE("name")
);
--> statement-breakpoint
ALTER TABLE "power_cluster_memberships" ADD CONSTRAINT "power_cluster_memberships_host_id_hosts_id_fk" FOREIGN KEY ("host_id") REFERENCES "public"."hosts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_cluster_memberships" ADD CONSTRAINT "power_cluster_memberships_cluster_id_power_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."power_clusters"("id") ON DELETE set null ON UPDATE no action;