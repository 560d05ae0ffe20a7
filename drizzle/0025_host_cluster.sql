ALTER TABLE "hosts" ADD COLUMN "cluster_mode" text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "cluster_name" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "cluster_link0" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "cluster_member_host_id" uuid;--> statement-breakpoint
ALTER TABLE "hosts" ADD CONSTRAINT "hosts_cluster_member_host_id_hosts_id_fk" FOREIGN KEY ("cluster_member_host_id") REFERENCES "public"."hosts"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hosts" ADD CONSTRAINT "hosts_cluster_mode" CHECK (("hosts"."cluster_mode" = 'none' and "hosts"."cluster_link0" is null and "hosts"."cluster_member_host_id" is null)
      or ("hosts"."cluster_mode" = 'create' and "hosts"."cluster_name" is not null and "hosts"."cluster_link0" is not null)
      or ("hosts"."cluster_mode" = 'join' and "hosts"."cluster_link0" is not null));