ALTER TYPE "public"."power_controller_kind" ADD VALUE 'pve-wol';--> statement-breakpoint
ALTER TABLE "power_controllers" DROP CONSTRAINT "power_controllers_kind_fields";--> statement-breakpoint
ALTER TABLE "power_controllers" ADD COLUMN "redfish_auth" text;--> statement-breakpoint
-- Every Redfish controller stored before sessions existed used basic auth.
UPDATE "power_controllers" SET "redfish_auth" = 'basic' WHERE "kind"::text = 'redfish';--> statement-breakpoint
ALTER TABLE "power_controllers" ADD CONSTRAINT "power_controllers_redfish_auth" CHECK (("power_controllers"."kind"::text = 'redfish') = ("power_controllers"."redfish_auth" is not null)
        and ("power_controllers"."redfish_auth" is null or "power_controllers"."redfish_auth" in ('basic', 'session')));--> statement-breakpoint
ALTER TABLE "power_controllers" ADD CONSTRAINT "power_controllers_kind_fields" CHECK (("power_controllers"."kind" in ('redfish', 'ipmi') and "power_controllers"."address" is not null and "power_controllers"."username" is not null
            and ("power_controllers"."kind" = 'ipmi' or "power_controllers"."system_id" is not null))
        or ("power_controllers"."kind" = 'wol' and "power_controllers"."mac" is not null and "power_controllers"."broadcast_address" is not null)
        or "power_controllers"."kind"::text = 'pve-wol');