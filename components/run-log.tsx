"use client";

import { useLayoutEffect, useRef } from "react";
import type { RunDetail } from "@/lib/runs/get-run";
import { formatClock } from "./format";

/**
 * The run's recent log lines, newest at the bottom. Follows new lines while the operator is at
 * the bottom; leaves the scroll position alone while they read further up.
 */
export function RunLog({ lines }: { lines: RunDetail["log"] }) {
  const boxRef = useRef<HTMLDivElement>(null);
  const atBottomRef = useRef(true);
  const lastId = lines[lines.length - 1]?.id;

  useLayoutEffect(() => {
    const box = boxRef.current;
    if (box && atBottomRef.current) box.scrollTop = box.scrollHeight;
  }, [lastId]);

  if (lines.length === 0) return <p className="muted">No log lines yet.</p>;
  return (
    <div
      ref={boxRef}
      className="log"
      tabIndex={0}
      role="log"
      aria-label="Run log"
      data-testid="run-log"
      onScroll={(event) => {
        const box = event.currentTarget;
        atBottomRef.current = box.scrollHeight - box.scrollTop - box.clientHeight < 24;
      }}
    >
      <ol>
        {lines.map((line) => (
          <li key={line.id}>
            <time dateTime={line.at} suppressHydrationWarning>
              {formatClock(line.at)}
            </time>{" "}
            <span className="log-step">{line.step}</span>{" "}
            <span className="log-line">{line.line}</span>
          </li>
        ))}
      </ol>
    </div>
  );
}

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
