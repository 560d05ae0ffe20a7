-- The audit log is append-only in the database itself, not only by convention in the code:
-- a bug, a hand-typed psql session or a compromised console process cannot quietly rewrite who did
-- what. UPDATE and DELETE are refused row by row, TRUNCATE per statement. (A superuser can still
-- drop the trigger; that leaves a trace in the server log and is outside what an app can prevent.)
CREATE FUNCTION "audit_log_refuse_change"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'Audit rows are never changed or removed; record a new entry instead.';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "audit_log_no_update_or_delete"
  BEFORE UPDATE OR DELETE ON "audit_log"
  FOR EACH ROW EXECUTE FUNCTION "audit_log_refuse_change"();
--> statement-breakpoint
CREATE TRIGGER "audit_log_no_truncate"
  BEFORE TRUNCATE ON "audit_log"
  FOR EACH STATEMENT EXECUTE FUNCTION "audit_log_refuse_change"();
