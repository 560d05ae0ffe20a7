import Link from "next/link";
import type { AuditEntryView } from "@/lib/audit/list-audit";
import { AuditOutcomeBadge } from "./audit-outcome-badge";
import styles from "./audit-log.module.css";

/** `2026-11-30 05:32:08 UTC`: one unambiguous clock for everyone reading the log together. */
function utcTime(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** The audit entries of one page, newest first. */
export function AuditTable({ entries }: { entries: AuditEntryView[] }) {
  return (
    <table className={`hosts-table ${styles.table} stack-on-phone`} data-testid="audit-table">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Who</th>
          <th scope="col">Action</th>
          <th scope="col">Target</th>
          <th scope="col">Outcome</th>
          <th scope="col">Detail</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((entry) => (
          <tr key={entry.id} data-testid="audit-row" data-action={entry.action}>
            <td className={styles.time} data-label="When">
              <time dateTime={entry.at} title={entry.at}>
                {utcTime(entry.at)}
              </time>
            </td>
            <td data-label="Who">{entry.actorName}</td>
            <td className="mono" data-label="Action">
              {entry.action}
            </td>
            <td data-label="Target">
              {entry.host && (
                <Link href={`/hosts/${entry.host.id}`} data-testid="audit-host">
                  {entry.host.name}
                </Link>
              )}
              {!entry.host && entry.subject && (
                <Link
                  href={entry.subject.href}
                  data-testid="audit-subject"
                  data-kind={entry.subject.kind}
                >
                  {entry.subject.name}
                </Link>
              )}
              <span
                className={`mono${entry.host || entry.subject ? ` muted small ${styles.target}` : ""}`}
              >
                {entry.target ?? "—"}
              </span>
            </td>
            <td data-label="Outcome">
              <AuditOutcomeBadge outcome={entry.outcome} />
            </td>
            <td className={styles.detail} data-label="Detail">
              {entry.detail ? detailText(entry.detail) : ""}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** `reason: The run has already ended.` for the common case, compact JSON otherwise. */
function detailText(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" · ");
}
