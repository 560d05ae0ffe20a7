CREATE TABLE "console_process_restarts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"process" text NOT NULL,
	"ended_at" timestamp with time zone NOT NULL,
	"ending" text NOT NULL,
	"up_ms" integer,
	"restart_delay_ms" integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX "console_process_restarts_ended_idx" ON "console_process_restarts" USING btree ("ended_at");