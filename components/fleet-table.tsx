"use client";

import Link from "next/link";
import { useRouter } from "next/navigation";
import { memo, useRef, type KeyboardEvent } from "react";
import type { FleetSort } from "@/lib/hosts/fleet-schemas";
import type { HostSummary } from "@/lib/hosts/list-hosts";
import type { AttentionReason } from "@/lib/hosts/needs-attention";
import { formatAgo } from "./fleet-format";
import { secondsSince, shortFingerprint } from "./format";
import styles from "./fleet.module.css";
import { PhaseLine } from "./phase-line";
import { StateBadge } from "./state-badge";

const COLUMNS: { label: string; sort?: FleetSort }[] = [
  { label: "Name", sort: "name" },
  { label: "Address", sort: "address" },
  { label: "State", sort: "state" },
  { label: "Phase / reason" },
  { label: "Updated", sort: "updated" },
  { label: "Host key" },
];

/** The attention reasons the state badge does not already say. */
const EXTRA_FLAG: Partial<Record<AttentionReason, { text: string; className: string }>> = {
  "templates missing": { text: "templates missing", className: "badge-failed" },
  "templates unchecked": { text: "templates: could not check", className: "badge-onboarding" },
  stalled: { text: "stalled", className: "badge-decommissioning" },
};

/**
 * One page of hosts. Headers sort (aria-sort says how); ↑/↓ move through the rows, Enter opens
 * the host, Home/End jump to the first/last row, and ↑ on the first row goes back to the search.
 */
export function FleetTable({
  hosts,
  sort,
  dir,
  nowMs,
  onSort,
  onLeaveTop,
}: {
  hosts: HostSummary[];
  sort: FleetSort;
  dir: "asc" | "desc";
  /** Coarse clock for "updated … ago" (rows re-render when it moves, not every second). */
  nowMs: number;
  onSort: (sort: FleetSort) => void;
  onLeaveTop: () => void;
}) {
  const router = useRouter();
  const body = useRef<HTMLTableSectionElement>(null);

  const rows = () => [...(body.current?.querySelectorAll<HTMLTableRowElement>("tr") ?? [])];
  const onKeyDown = (event: KeyboardEvent<HTMLTableSectionElement>) => {
    const list = rows();
    const index = list.findIndex((row) => row.contains(document.activeElement));
    const focus = (i: number) => list[Math.max(0, Math.min(list.length - 1, i))]?.focus();
    switch (event.key) {
      case "ArrowDown":
        event.preventDefault();
        focus(index + 1);
        break;
      case "ArrowUp":
        event.preventDefault();
        if (index <= 0) onLeaveTop();
        else focus(index - 1);
        break;
      case "Home":
        event.preventDefault();
        focus(0);
        break;
      case "End":
        event.preventDefault();
        focus(list.length - 1);
        break;
      case "Enter": {
        const id = list[index]?.dataset.hostId;
        if (id && event.target === list[index]) {
          event.preventDefault();
          router.push(`/hosts/${id}`);
        }
        break;
      }
    }
  };

  return (
    <table className={`hosts-table ${styles.table}`} data-testid="hosts-table">
      <thead>
        <tr>
          {COLUMNS.map((column) => {
            const active = column.sort === sort;
            return (
              <th
                key={column.label}
                scope="col"
                aria-sort={
                  !column.sort
                    ? undefined
                    : !active
                      ? "none"
                      : dir === "asc"
                        ? "ascending"
                        : "descending"
                }
              >
                {column.sort ? (
                  <button
                    type="button"
                    className={styles.sortButton}
                    onClick={() => onSort(column.sort!)}
                    data-testid={`sort-${column.sort}`}
                  >
                    {column.label}
                    <span aria-hidden="true" className={styles.sortMark}>
                      {active ? (dir === "asc" ? " ▲" : " ▼") : " ↕"}
                    </span>
                  </button>
                ) : (
                  column.label
                )}
              </th>
            );
          })}
        </tr>
      </thead>
      <tbody ref={body} onKeyDown={onKeyDown}>
        {hosts.map((host) => (
          <FleetRow key={host.id} host={host} nowMs={nowMs} />
        ))}
      </tbody>
    </table>
  );
}

/** Not in React's attribute types; passed through as is (Element Timing API). */
const ROW_PAINT_TIMING = { elementtiming: "fleet-row" } as Record<string, string>;

/** A row re-renders only when its host changed (a live patch) or the coarse clock moved. */
const FleetRow = memo(function FleetRow({ host, nowMs }: { host: HostSummary; nowMs: number }) {
  return (
    <tr
      tabIndex={-1}
      data-host-id={host.id}
      data-testid={`host-row-${host.name}`}
      data-state={host.state}
      className={styles.row}
    >
      <td>
        <Link href={`/hosts/${host.id}`} className="host-link">
          {host.name}
        </Link>
        {host.proxmox.nodeName && host.proxmox.nodeName !== host.name && (
          <div className={styles.node} title="Proxmox node name">
            node {host.proxmox.nodeName}
          </div>
        )}
        {host.proxmox.cluster?.name && host.proxmox.cluster.mode !== "none" && (
          <div className={styles.node} title="Proxmox cluster">
            cluster{" "}
            <Link
              href={`/hosts?cluster=${encodeURIComponent(host.proxmox.cluster.name)}`}
              data-testid="host-row-cluster"
            >
              {host.proxmox.cluster.name}
            </Link>
          </div>
        )}
      </td>
      {/* elementtiming: the browser records when the row's address text is painted (the fleet
          e2e test and bench read it as "rows visible"). On the cell: text inside a link is not
          eligible for Element Timing. */}
      <td className="mono" {...ROW_PAINT_TIMING}>
        {host.address}
        {host.sshPort !== 22 && `:${host.sshPort}`}
      </td>
      <td>
        <StateBadge state={host.state} />
        {host.attention.map((reason) => {
          const flag = EXTRA_FLAG[reason];
          if (!flag) return null;
          return (
            <span
              key={reason}
              className={`badge ${flag.className} ${styles.flag}`}
              title={
                reason === "stalled"
                  ? "Its next tick is overdue: is a worker running?"
                  : (host.templateCheck.failure ?? undefined)
              }
              data-testid={
                reason === "stalled" ? `stalled-${host.name}` : `template-check-${host.name}`
              }
            >
              {flag.text}
            </span>
          );
        })}
      </td>
      <td className={styles.phase}>
        <PhaseLine run={host.run} testId={`phase-line-${host.name}`} />
      </td>
      <td className={styles.updated} title={new Date(host.lastActivityAt).toISOString()}>
        <span suppressHydrationWarning>{formatAgo(secondsSince(host.lastActivityAt, nowMs))}</span>
      </td>
      <td className="mono">
        {host.hostKeySha256 ? (
          <span title={host.hostKeySha256} data-testid="host-key-short">
            {shortFingerprint(host.hostKeySha256)}
          </span>
        ) : (
          <span className="muted">not pinned yet</span>
        )}
      </td>
    </tr>
  );
});
