CREATE TYPE "public"."log_line_kind" AS ENUM('command', 'output', 'result', 'note', 'file', 'marker', 'run');--> statement-breakpoint
CREATE TABLE "run_log_chunks" (
	"run_id" uuid NOT NULL,
	"seq" integer NOT NULL,
	"step" text NOT NULL,
	"kind" "log_line_kind" NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"first_line" integer NOT NULL,
	"line_count" integer NOT NULL,
	"first_byte" bigint NOT NULL,
	"bytes" integer NOT NULL,
	"text" text NOT NULL,
	CONSTRAINT "run_log_chunks_run_id_seq_pk" PRIMARY KEY("run_id","seq")
);
--> statement-breakpoint
CREATE TABLE "run_log_heads" (
	"run_id" uuid PRIMARY KEY NOT NULL,
	"last_seq" integer DEFAULT 0 NOT NULL,
	"lines" integer DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"output_bytes" bigint DEFAULT 0 NOT NULL,
	"truncated" boolean DEFAULT false NOT NULL,
	"dropped_lines" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "run_log_sources" (
	"run_id" uuid NOT NULL,
	"path" text NOT NULL,
	"offset" bigint DEFAULT 0 NOT NULL,
	"inode" text,
	"pending" text DEFAULT '' NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_log_sources_run_id_path_pk" PRIMARY KEY("run_id","path")
);
--> statement-breakpoint
ALTER TABLE "run_log_chunks" ADD CONSTRAINT "run_log_chunks_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_log_heads" ADD CONSTRAINT "run_log_heads_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_log_sources" ADD CONSTRAINT "run_log_sources_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "run_log_chunks_line_idx" ON "run_log_chunks" USING btree ("run_id","first_line");