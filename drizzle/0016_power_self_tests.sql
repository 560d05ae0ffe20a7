CREATE TYPE "public"."power_self_test_occasion" AS ENUM('schedule', 'armed', 'start-up', 'button');--> statement-breakpoint
CREATE TYPE "public"."power_self_test_verdict" AS ENUM('ok', 'warning', 'failed', 'could-not-check');--> statement-breakpoint
CREATE TABLE "power_self_tests" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"occasion" "power_self_test_occasion" NOT NULL,
	"requested_by" text,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone DEFAULT now() NOT NULL,
	"verdict" "power_self_test_verdict",
	"skipped_reason" text,
	"checks" jsonb DEFAULT '[]'::jsonb NOT NULL,
	CONSTRAINT "power_self_tests_verdict_or_skipped" CHECK (("power_self_tests"."verdict" is null) <> ("power_self_tests"."skipped_reason" is null))
);
--> statement-breakpoint
CREATE INDEX "power_self_tests_finished_idx" ON "power_self_tests" USING btree ("finished_at");