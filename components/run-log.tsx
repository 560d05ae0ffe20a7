"use client";

import type { RunDetail } from "@/lib/runs/get-run";
import { splitFailure } from "./failure-text";
import { formatClock } from "./format";

/** Event kinds in words: the operator reads what happened, not the engine's names for it. */
const KIND_WORDS: Record<string, string> = {
  "run.started": "started",
  "run.succeeded": "finished",
  "run.failed": "failed",
  "run.aborted": "aborted",
  "run.abort_requested": "abort asked",
  "run.retried": "retried",
  "step.advanced": "step done",
  "host.created": "host added",
  "host.edited": "host edited",
  "host.pin_cleared": "key pin cleared",
  "host.power_controller_set": "power controller set",
  "host.power_controller_deleted": "power controller removed",
  "host.power_on": "power on",
  "host.reonboarded": "onboarding again",
  "host.decommission_started": "decommission",
};

export function eventKindWords(kind: string): string {
  return KIND_WORDS[kind] ?? kind.replace(/[._]/g, " ");
}

/**
 * A failure event names its step and the reason: the reason's one line (what failed, what to
 * do) — the output it quoted is in the summary above and in the log, not repeated here.
 */
function eventMessage(event: RunDetail["events"][number]): string {
  if (event.kind !== "run.failed") return event.message;
  const colon = event.message.indexOf(": ");
  if (colon < 0) return splitFailure(event.message).headline;
  return `${event.message.slice(0, colon)}: ${splitFailure(event.message.slice(colon + 2)).headline}`;
}

export function RunEvents({ events }: { events: RunDetail["events"] }) {
  if (events.length === 0) return <p className="muted">No events yet.</p>;
  return (
    <ol className="events" data-testid="run-events">
      {events.map((event) => (
        <li key={event.id} data-kind={event.kind}>
          <time dateTime={event.at} suppressHydrationWarning>
            {formatClock(event.at)}
          </time>
          <span className="event-kind">{eventKindWords(event.kind)}</span>
          <span className="event-message">{eventMessage(event)}</span>
          <span className="event-actor muted">{event.actor}</span>
        </li>
      ))}
    </ol>
  );
}
