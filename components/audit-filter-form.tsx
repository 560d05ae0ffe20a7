import Link from "next/link";
import { AUDIT_ACTIONS } from "@/lib/audit/actions";
import styles from "./audit-log.module.css";

type Values = Partial<Record<"action" | "actor" | "target" | "outcome" | "from" | "to", string>>;

/**
 * The audit log's filters as a plain GET form: the filter lives in the URL (shareable, survives a
 * reload, works before JavaScript loads), and Enter in any field applies it.
 */
export function AuditFilterForm({
  values,
  fieldErrors,
}: {
  values: Values;
  fieldErrors: Record<string, string[]>;
}) {
  const invalid = (field: string) => (fieldErrors[field]?.length ? true : undefined);
  const errorId = (field: string) => (invalid(field) ? `audit-${field}-error` : undefined);
  const error = (field: string) =>
    invalid(field) ? (
      <p className="field-error" id={errorId(field)}>
        {fieldErrors[field]!.join(" ")}
      </p>
    ) : null;

  return (
    <form method="get" action="/audit" className={styles.filters} aria-label="Filter the audit log">
      <div className="field">
        <label htmlFor="audit-action">Action</label>
        <select
          id="audit-action"
          name="action"
          defaultValue={values.action ?? ""}
          aria-invalid={invalid("action")}
          aria-describedby={errorId("action")}
        >
          <option value="">any</option>
          {AUDIT_ACTIONS.map((action) => (
            <option key={action} value={action}>
              {action}
            </option>
          ))}
        </select>
        {error("action")}
      </div>
      <div className="field">
        <label htmlFor="audit-actor">Who</label>
        <input
          id="audit-actor"
          name="actor"
          type="search"
          defaultValue={values.actor ?? ""}
          placeholder="user name contains…"
          aria-invalid={invalid("actor")}
          aria-describedby={errorId("actor")}
        />
        {error("actor")}
      </div>
      <div className="field">
        <label htmlFor="audit-target">Target</label>
        <input
          id="audit-target"
          name="target"
          type="search"
          defaultValue={values.target ?? ""}
          placeholder="host:…, run:…, user:…"
          aria-invalid={invalid("target")}
          aria-describedby={errorId("target")}
        />
        {error("target")}
      </div>
      <div className="field">
        <label htmlFor="audit-outcome">Outcome</label>
        <select
          id="audit-outcome"
          name="outcome"
          defaultValue={values.outcome ?? ""}
          aria-invalid={invalid("outcome")}
          aria-describedby={errorId("outcome")}
        >
          <option value="">any</option>
          <option value="success">success</option>
          <option value="failure">failure</option>
          <option value="denied">denied</option>
        </select>
        {error("outcome")}
      </div>
      <div className="field">
        <label htmlFor="audit-from">From (UTC)</label>
        <input
          id="audit-from"
          name="from"
          type="datetime-local"
          step={1}
          defaultValue={values.from ?? ""}
          aria-invalid={invalid("from")}
          aria-describedby={errorId("from")}
        />
        {error("from")}
      </div>
      <div className="field">
        <label htmlFor="audit-to">To (UTC)</label>
        <input
          id="audit-to"
          name="to"
          type="datetime-local"
          step={1}
          defaultValue={values.to ?? ""}
          aria-invalid={invalid("to")}
          aria-describedby={errorId("to")}
        />
        {error("to")}
      </div>
      <div className={styles.actions}>
        <button type="submit" className="button button-primary">
          Filter
        </button>
        <Link href="/audit" className="button">
          Clear
        </Link>
      </div>
    </form>
  );
}
