import type { PowerEventInput } from "@/lib/power/records/power-events";
import type { CrashLoopEvent } from "./supervisor";

/** The power event kinds of a crash loop (and so its notification kinds, family `console.*`). */
export const CRASH_LOOP_KINDS = {
  began: "console.crash_loop",
  over: "console.crash_loop_over",
} as const;

/**
 * A crash loop as a power event: the console's own health is part of power protection — a
 * worker or a database that keeps dying is a console that may not shut anything down when the
 * battery runs out (critical); a web server that does is a console nobody can look at, while the
 * worker protects on (warning). The end of a loop is good news (info). The words are the log's.
 */
export function crashLoopPowerEvent(event: CrashLoopEvent): PowerEventInput {
  const severity = !event.began ? "info" : event.service === "web server" ? "warning" : "critical";
  const text = event.text.charAt(0).toUpperCase() + event.text.slice(1);
  return {
    kind: event.began ? CRASH_LOOP_KINDS.began : CRASH_LOOP_KINDS.over,
    severity,
    at: event.at,
    message: event.began ? `${text}; npm start's log says why it ends.` : `${text}.`,
    data: {
      process: event.service,
      restarts: event.restarts,
      windowMinutes: event.windowMs / 60_000,
      lastEnding: event.lastEnding,
    },
  };
}
