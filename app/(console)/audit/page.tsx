import type { Metadata } from "next";
import Link from "next/link";
import { AuditFilterForm } from "@/components/audit-filter-form";
import { AuditLiveRefresh } from "@/components/audit-live-refresh";
import styles from "@/components/audit-log.module.css";
import { AuditTable } from "@/components/audit-table";
import { requirePageActor } from "@/lib/auth/actor";
import { AUDIT_READER_ROLE } from "@/lib/audit/access";
import { auditFilterInput, listAudit, ZAuditFilter } from "@/lib/audit/list-audit";
import { getDb } from "@/lib/db/client";
import { fieldErrors as zodFieldErrors } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Audit log" };

/** The fields the filter form shows; `cursor` and `limit` travel in the URL only. */
const FILTER_FIELDS = ["action", "actor", "target", "outcome", "from", "to"];

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

export default async function AuditPage({ searchParams }: { searchParams: SearchParams }) {
  await requirePageActor(AUDIT_READER_ROLE, "/audit");
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(await searchParams)) {
    const last = Array.isArray(value) ? value.at(-1) : value;
    if (last !== undefined) params.set(key, last);
  }
  const input = auditFilterInput(params);
  const parsed = ZAuditFilter.safeParse(input);
  const page = parsed.success ? await listAudit(getDb(), parsed.data) : null;
  const fieldErrors = parsed.success ? {} : zodFieldErrors(parsed.error);
  const filtered = FILTER_FIELDS.some((key) => input[key]);

  const nextHref = (cursor: string) => {
    const next = new URLSearchParams(params);
    next.set("cursor", cursor);
    return `/audit?${next.toString()}`;
  };
  const firstHref = () => {
    const first = new URLSearchParams(params);
    first.delete("cursor");
    return `/audit?${first.toString()}`;
  };

  return (
    <>
      <div className="page-head">
        <h1>Audit log</h1>
        {!input.cursor && page ? <AuditLiveRefresh /> : null}
      </div>
      <p className="lead">
        Who did what, to what, when, and how it ended: sign-ins, hosts added, retries, aborts,
        catalog, user and token changes. Newest first. Entries are never changed or removed.
      </p>
      <AuditFilterForm values={input} fieldErrors={fieldErrors} />
      {!page ? (
        <div className="notice notice-error" role="alert" data-testid="audit-filter-error">
          <p>
            Some filters need attention.{" "}
            {Object.entries(fieldErrors)
              .filter(([field]) => !FILTER_FIELDS.includes(field))
              .flatMap(([, messages]) => messages)
              .join(" ")}{" "}
            Fix them above, or <Link href="/audit">clear the filters</Link>.
          </p>
        </div>
      ) : page.entries.length === 0 ? (
        <div className="empty" data-testid="audit-empty">
          <p>
            {input.cursor
              ? "No older entries."
              : filtered
                ? "No entries match these filters."
                : "Nothing has been recorded yet."}
          </p>
        </div>
      ) : (
        <AuditTable entries={page.entries} />
      )}
      {page ? (
        <nav className={styles.pager} aria-label="Audit log pages">
          {input.cursor ? <Link href={firstHref()}>← Newest entries</Link> : <span />}
          {page.nextCursor ? (
            <Link href={nextHref(page.nextCursor)} data-testid="audit-older">
              Older entries →
            </Link>
          ) : null}
        </nav>
      ) : null}
    </>
  );
}
