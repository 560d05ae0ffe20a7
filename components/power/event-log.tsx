"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { ReactNode } from "react";
import { kindTitle } from "@/lib/notify/message";
import type { PowerEventPage, PowerEventView } from "@/lib/power/queries/power-events";
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { AcknowledgeEventButton } from "./acknowledge-event-button";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";
import { EventNotificationMark } from "../notify/event-notification-mark";

export type EventFilterValues = Partial<
  Record<"severity" | "kind" | "upsId" | "unacknowledged" | "from" | "to" | "cursor", string>
>;

const SEVERITY_ICON = { info: "ℹ", warning: "⚠", critical: "✖" } as const;

/** Event groups an operator filters by; each matches its `group.*` kinds. */
const KIND_GROUPS = [
  ["ups", "UPS (battery, mains, reachability)"],
  ["trigger", "triggers fired"],
  ["latch", "latches released"],
  ["shutdown", "shutdown calls and cancellations"],
  ["target", "targets down / still up"],
  ["mode", "arming and disarming"],
  ["config", "configuration changes"],
  ["drill", "drills started"],
  ["cluster", "clusters (fell back, membership)"],
  ["consolidate", "consolidation"],
  ["console", "the console's own processes (crash loops)"],
] as const;

function eventsUrl(filter: EventFilterValues): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value) params.set(key, value);
  return `/api/power/events?${params.toString()}`;
}

/**
 * The power event log, newest first. Its filters live in the URL (shareable, work before
 * JavaScript loads); the newest page follows the live stream, older pages are history.
 */
export function PowerEventLog({
  initial,
  filter,
  fieldErrors,
  ups,
}: {
  initial: PowerEventPage | null;
  filter: EventFilterValues;
  fieldErrors: Record<string, string[]>;
  ups: { id: string; name: string }[];
}) {
  const refetchInterval = useFallbackRefetchInterval();
  const live = !filter.cursor && initial !== null;
  const { data } = useQuery({
    queryKey: powerKeys.eventPage({ ...filter }),
    queryFn: () => fetchJson<PowerEventPage>(eventsUrl(filter)),
    initialData: initial ?? undefined,
    enabled: live,
    refetchInterval: live ? refetchInterval : false,
  });
  const page = data ?? initial;
  const withoutCursor = { ...filter, cursor: undefined };
  const href = (values: EventFilterValues) => {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(values)) if (value) params.set(key, value);
    const query = params.toString();
    return `/power${query ? `?${query}` : ""}#events`;
  };

  return (
    <section className="panel" aria-labelledby="events-heading" id="events">
      <h2 id="events-heading">Event log</h2>
      <EventFilterForm filter={filter} fieldErrors={fieldErrors} ups={ups} />
      {!page ? (
        <p className="notice notice-error" role="alert" data-testid="power-event-filter-error">
          Some filters need attention. {Object.values(fieldErrors).flat().join(" ")}{" "}
          <Link href="/power#events">Clear the filters</Link>.
        </p>
      ) : page.events.length === 0 ? (
        <p className="muted" data-testid="power-events-empty">
          {filter.cursor ? "No older events." : "No events match."}
        </p>
      ) : (
        <table className={`${styles.table} stack-on-phone`} data-testid="power-events">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Severity</th>
              <th scope="col">What</th>
              <th scope="col">Acknowledged</th>
            </tr>
          </thead>
          <tbody>
            {page.events.map((event) => (
              <EventRow key={event.id} event={event} />
            ))}
          </tbody>
        </table>
      )}
      {page && (
        <nav className={styles.inlineActions} aria-label="Event log pages">
          {filter.cursor && <Link href={href(withoutCursor)}>← Newest events</Link>}
          {page.nextCursor && (
            <Link
              href={href({ ...filter, cursor: page.nextCursor })}
              data-testid="power-events-older"
            >
              Older events →
            </Link>
          )}
        </nav>
      )}
    </section>
  );
}

function EventRow({ event }: { event: PowerEventView }) {
  const needsAck = event.severity !== "info" && !event.acknowledged;
  return (
    <tr
      data-testid={`power-event-${event.id}`}
      data-kind={event.kind}
      data-severity={event.severity}
    >
      <td className={styles.time} data-label="When">
        <time dateTime={event.at} suppressHydrationWarning>
          {formatDateTime(event.at)}
        </time>
      </td>
      <td
        className={`${styles.severity} ${styles[`severity-${event.severity}`]}`}
        data-label="Severity"
      >
        <span aria-hidden="true">{SEVERITY_ICON[event.severity]} </span>
        {event.severity}
      </td>
      <td>
        <div className="event-message">{event.message}</div>
        <div className="muted small">
          <span title={event.kind}>{kindTitle(event.kind)}</span>
          {event.ups && <> · {event.ups.name}</>}
          {event.target && <> · {event.target.name}</>}
        </div>
        <EventNotificationMark failedTo={event.notificationFailedTo} />
      </td>
      <td>
        {event.acknowledged ? (
          <span className="small">
            by {event.acknowledged.by},{" "}
            <time dateTime={event.acknowledged.at} suppressHydrationWarning>
              {formatDateTime(event.acknowledged.at)}
            </time>
          </span>
        ) : needsAck ? (
          <AcknowledgeEventButton eventId={event.id} />
        ) : (
          <span className="muted small">—</span>
        )}
      </td>
    </tr>
  );
}

function EventFilterForm({
  filter,
  fieldErrors,
  ups,
}: {
  filter: EventFilterValues;
  fieldErrors: Record<string, string[]>;
  ups: { id: string; name: string }[];
}) {
  const field = (
    name: keyof EventFilterValues,
    label: string,
    control: (props: {
      id: string;
      name: string;
      className: string;
      "aria-invalid": true | undefined;
      "aria-describedby": string | undefined;
    }) => ReactNode,
  ) => {
    const error = fieldErrors[name]?.join(" ");
    return (
      <div className="field">
        <label htmlFor={`event-${name}`}>{label}</label>
        {control({
          id: `event-${name}`,
          name,
          className: "control",
          "aria-invalid": error ? true : undefined,
          "aria-describedby": error ? `event-${name}-error` : undefined,
        })}
        {error && (
          <p className="field-error" id={`event-${name}-error`}>
            {error}
          </p>
        )}
      </div>
    );
  };
  return (
    <form
      method="get"
      action="/power#events"
      className={styles.filters}
      aria-label="Filter the event log"
    >
      {field("severity", "Severity", (props) => (
        <select {...props} defaultValue={filter.severity ?? ""}>
          <option value="">all</option>
          <option value="warning">warning and critical</option>
          <option value="critical">critical only</option>
        </select>
      ))}
      {field("kind", "Kind", (props) => (
        <select {...props} defaultValue={filter.kind ?? ""}>
          <option value="">all</option>
          {KIND_GROUPS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      ))}
      {field("upsId", "UPS", (props) => (
        <select {...props} defaultValue={filter.upsId ?? ""}>
          <option value="">all</option>
          {ups.map((u) => (
            <option key={u.id} value={u.id}>
              {u.name}
            </option>
          ))}
        </select>
      ))}
      {field("from", "From (UTC)", (props) => (
        <input type="datetime-local" {...props} defaultValue={filter.from ?? ""} />
      ))}
      {field("to", "To (UTC)", (props) => (
        <input type="datetime-local" {...props} defaultValue={filter.to ?? ""} />
      ))}
      <div className="field">
        <label>
          <input
            type="checkbox"
            name="unacknowledged"
            value="true"
            defaultChecked={filter.unacknowledged === "true"}
          />{" "}
          Only unacknowledged alarms
        </label>
      </div>
      <div className="field">
        <button type="submit" className="button">
          Filter
        </button>
      </div>
    </form>
  );
}
