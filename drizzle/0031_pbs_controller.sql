ALTER TABLE "power_controllers" ALTER COLUMN "host_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "power_controllers" ADD COLUMN "target_id" uuid;--> statement-breakpoint
ALTER TABLE "power_controllers" ADD CONSTRAINT "power_controllers_target_id_power_targets_id_fk" FOREIGN KEY ("target_id") REFERENCES "public"."power_targets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "power_controllers" ADD CONSTRAINT "power_controllers_target_id_unique" UNIQUE("target_id");--> statement-breakpoint
ALTER TABLE "power_controllers" ADD CONSTRAINT "power_controllers_one_owner" CHECK (("power_controllers"."host_id" is null) <> ("power_controllers"."target_id" is null));