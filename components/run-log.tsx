"use client";

import type { RunDetail } from "@/lib/runs/get-run";
import { formatClock } from "./format";

export function RunEvents({ events }: { events: RunDetail["events"] }) {
  if (events.length === 0) return <p className="muted">No events yet.</p>;
  return (
    <ol className="events" data-testid="run-events">
      {events.map((event) => (
        <li key={event.id}>
          <time dateTime={event.at} suppressHydrationWarning>
            {formatClock(event.at)}
          </time>
          <span className="event-kind">{event.kind}</span>
          <span className="event-message">{event.message}</span>
          <span className="event-actor muted">{event.actor}</span>
        </li>
      ))}
    </ol>
  );
}
