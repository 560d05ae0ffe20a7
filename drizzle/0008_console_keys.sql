CREATE TYPE "public"."console_key_rotation_outcome" AS ENUM('pending', 'switched', 'new_key_refused', 'unreachable');--> statement-breakpoint
CREATE TYPE "public"."console_key_state" AS ENUM('active', 'retiring', 'retired');--> statement-breakpoint
ALTER TYPE "public"."credential_kind" ADD VALUE 'console_key';--> statement-breakpoint
CREATE TABLE "console_key_credentials" (
	"credential_id" uuid PRIMARY KEY NOT NULL,
	"console_key_id" uuid NOT NULL,
	"assigned_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "console_key_rotation_hosts" (
	"rotation_id" uuid NOT NULL,
	"host_id" uuid NOT NULL,
	"host_name" text NOT NULL,
	"outcome" "console_key_rotation_outcome" DEFAULT 'pending' NOT NULL,
	"detail" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "console_key_rotation_hosts_rotation_id_host_id_pk" PRIMARY KEY("rotation_id","host_id")
);
--> statement-breakpoint
CREATE TABLE "console_key_rotations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"run_id" uuid NOT NULL,
	"from_key_id" uuid NOT NULL,
	"to_key_id" uuid NOT NULL,
	"started_by" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "console_key_rotations_run_id_unique" UNIQUE("run_id")
);
--> statement-breakpoint
CREATE TABLE "console_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"public_key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"sealed_private_key" text NOT NULL,
	"state" "console_key_state" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"activated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp with time zone,
	CONSTRAINT "console_keys_fingerprint_unique" UNIQUE("fingerprint")
);
--> statement-breakpoint
ALTER TABLE "console_key_credentials" ADD CONSTRAINT "console_key_credentials_credential_id_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."credentials"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_key_credentials" ADD CONSTRAINT "console_key_credentials_console_key_id_console_keys_id_fk" FOREIGN KEY ("console_key_id") REFERENCES "public"."console_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_key_rotation_hosts" ADD CONSTRAINT "console_key_rotation_hosts_rotation_id_console_key_rotations_id_fk" FOREIGN KEY ("rotation_id") REFERENCES "public"."console_key_rotations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_key_rotation_hosts" ADD CONSTRAINT "console_key_rotation_hosts_host_id_hosts_id_fk" FOREIGN KEY ("host_id") REFERENCES "public"."hosts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_key_rotations" ADD CONSTRAINT "console_key_rotations_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_key_rotations" ADD CONSTRAINT "console_key_rotations_from_key_id_console_keys_id_fk" FOREIGN KEY ("from_key_id") REFERENCES "public"."console_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_key_rotations" ADD CONSTRAINT "console_key_rotations_to_key_id_console_keys_id_fk" FOREIGN KEY ("to_key_id") REFERENCES "public"."console_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "console_key_credentials_key_idx" ON "console_key_credentials" USING btree ("console_key_id");--> statement-breakpoint
CREATE UNIQUE INDEX "console_keys_one_active" ON "console_keys" USING btree ("state") WHERE "console_keys"."state" = 'active';