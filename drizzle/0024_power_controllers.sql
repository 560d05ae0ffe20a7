CREATE TYPE "public"."power_controller_kind" AS ENUM('redfish', 'ipmi', 'wol');--> statement-breakpoint
CREATE TABLE "power_controllers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"host_id" uuid NOT NULL,
	"kind" "power_controller_kind" NOT NULL,
	"address" text,
	"port" integer NOT NULL,
	"username" text,
	"system_id" text,
	"cert_sha256" text,
	"cert_pinned_at" timestamp with time zone,
	"mac" text,
	"broadcast_address" text,
	"sealed_secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "power_controllers_host_id_unique" UNIQUE("host_id"),
	CONSTRAINT "power_controllers_kind_fields" CHECK (("power_controllers"."kind" in ('redfish', 'ipmi') and "power_controllers"."address" is not null and "power_controllers"."username" is not null
            and ("power_controllers"."kind" = 'ipmi' or "power_controllers"."system_id" is not null))
        or ("power_controllers"."kind" = 'wol' and "power_controllers"."mac" is not null and "power_controllers"."broadcast_address" is not null))
);
--> statement-breakpoint
ALTER TABLE "power_controllers" ADD CONSTRAINT "power_controllers_host_id_hosts_id_fk" FOREIGN KEY ("host_id") REFERENCES "public"."hosts"("id") ON DELETE cascade ON UPDATE no action;