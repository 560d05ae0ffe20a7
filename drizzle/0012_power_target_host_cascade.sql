ALTER TABLE "power_targets" DROP CONSTRAINT "power_targets_host_id_hosts_id_fk";
--> statement-breakpoint
ALTER TABLE "power_targets" ADD CONSTRAINT "power_targets_host_id_hosts_id_fk" FOREIGN KEY ("host_id") REFERENCES "public"."hosts"("id") ON DELETE cascade ON UPDATE no action;