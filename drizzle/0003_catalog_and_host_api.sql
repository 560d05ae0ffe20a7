ALTER TYPE "public"."credential_kind" ADD VALUE 'api_token';--> statement-breakpoint
CREATE TABLE "plan_versions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"plan_id" uuid NOT NULL,
	"version" integer NOT NULL,
	"template_vmid" integer NOT NULL,
	"cores" integer NOT NULL,
	"memory_mib" integer NOT NULL,
	"disk_gib" integer NOT NULL,
	"published_at" timestamp with time zone,
	"sale_starts_at" timestamp with time zone,
	"sale_ends_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "plan_versions_plan_version" UNIQUE("plan_id","version")
);
--> statement-breakpoint
CREATE TABLE "plans" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"slug" text NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "plans_slug_unique" UNIQUE("slug")
);
--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "node_name" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "api_port" integer DEFAULT 8006 NOT NULL;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "api_cert_sha256" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "api_token_id" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "api_token_credential_id" uuid;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "capacity_cores" integer;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "capacity_memory_mib" integer;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "capacity_image_storage_gib" integer;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "capacity_registered_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "template_check_failure" text;--> statement-breakpoint
ALTER TABLE "hosts" ADD COLUMN "template_checked_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "plan_versions" ADD CONSTRAINT "plan_versions_plan_id_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "plan_versions_vmid_idx" ON "plan_versions" USING btree ("template_vmid");--> statement-breakpoint
ALTER TABLE "hosts" ADD CONSTRAINT "hosts_api_token_credential_id_credentials_id_fk" FOREIGN KEY ("api_token_credential_id") REFERENCES "public"."credentials"("id") ON DELETE no action ON UPDATE no action;