import Link from "next/link";
import type { ReactNode } from "react";
import { AUDIT_ACTIONS } from "@/lib/audit/actions";
import styles from "./audit-log.module.css";

type FilterName = "action" | "actor" | "target" | "outcome" | "from" | "to";
type Values = Partial<Record<FilterName, string>>;

/** What each filter control gets: ids are prefixed so they cannot clash with the page's others. */
type ControlProps = {
  id: string;
  name: FilterName;
  className: string;
  defaultValue: string;
  "aria-invalid": true | undefined;
  "aria-describedby": string | undefined;
};

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
  const field = (name: FilterName, label: string, control: (props: ControlProps) => ReactNode) => {
    const error = fieldErrors[name]?.length ? fieldErrors[name].join(" ") : undefined;
    const errorId = error ? `audit-${name}-error` : undefined;
    return (
      <div className="field">
        <label htmlFor={`audit-${name}`}>{label}</label>
        {control({
          id: `audit-${name}`,
          name,
          className: "control",
          defaultValue: values[name] ?? "",
          "aria-invalid": error ? true : undefined,
          "aria-describedby": errorId,
        })}
        {error && (
          <p className="field-error" id={errorId}>
            {error}
          </p>
        )}
      </div>
    );
  };

  return (
    <form method="get" action="/audit" className={styles.filters} aria-label="Filter the audit log">
      {field("action", "Action", (props) => (
        <select {...props}>
          <option value="">any</option>
          {AUDIT_ACTIONS.map((action) => (
            <option key={action} value={action}>
              {action}
            </option>
          ))}
        </select>
      ))}
      {field("actor", "Who", (props) => (
        <input {...props} type="search" placeholder="user name contains…" />
      ))}
      {field("target", "Target", (props) => (
        <input {...props} type="search" placeholder="host:…, run:…, user:…" />
      ))}
      {field("outcome", "Outcome", (props) => (
        <select {...props}>
          <option value="">any</option>
          <option value="success">success</option>
          <option value="failure">failure</option>
          <option value="denied">denied</option>
        </select>
      ))}
      {field("from", "From (UTC)", (props) => (
        <input {...props} type="datetime-local" step={1} />
      ))}
      {field("to", "To (UTC)", (props) => (
        <input {...props} type="datetime-local" step={1} />
      ))}
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
