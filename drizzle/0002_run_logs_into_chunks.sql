-- Logs written before the chunked run log: one line per row becomes one chunk per line
-- (kind note), in the old id order, so existing runs keep their logs.
INSERT INTO "run_log_chunks" ("run_id", "seq", "step", "kind", "at", "first_line", "line_count", "first_byte", "bytes", "text")
SELECT "run_id", "n", "step", 'note', "at", "n", 1, "start", "size", "line" || E'\n'
FROM (
	SELECT "run_id", "step", "at", replace("line", E'\n', ' ') AS "line",
		row_number() OVER w AS "n",
		octet_length(replace("line", E'\n', ' ')) + 1 AS "size",
		coalesce(sum(octet_length(replace("line", E'\n', ' ')) + 1) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS "start"
	FROM "run_logs"
	WINDOW w AS (PARTITION BY "run_id" ORDER BY "id")
) AS "old";--> statement-breakpoint
INSERT INTO "run_log_heads" ("run_id", "last_seq", "lines", "bytes", "output_bytes")
SELECT "run_id", max("seq"), max("seq"), sum("bytes"), 0 FROM "run_log_chunks" GROUP BY "run_id";--> statement-breakpoint
DROP TABLE "run_logs" CASCADE;
