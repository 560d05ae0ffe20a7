import type { CrashLoopReport } from "@/lib/supervisor/crash-loops";

/** How long after the first loop should be over the banner asks again (the server's clock rules). */
const RECHECK_MARGIN_MS = 500;

/**
 * The banner's sentence for one process in a crash loop; `at` is the last ending's time as the
 * page shows times. Says what keeps happening and where the reason is, not a guess at the cause.
 */
export function crashLoopSentence(loop: CrashLoopReport, at: string): string {
  const minutes = loop.windowMinutes === 1 ? "minute" : `${loop.windowMinutes} minutes`;
  return (
    `The ${loop.process} restarted ${loop.restarts} times in ${minutes}; last exit at ${at}: ` +
    `${loop.lastEnding} — see the console's log (the output of npm start) for why.`
  );
}

/**
 * When the banner's query asks again by itself: once the soonest loop would be over (a loop
 * ends by time passing, and no message announces that), and every `fallbackMs` while the live
 * stream is down (restarts then arrive unannounced). Otherwise the live stream's
 * `process-restart` message refreshes it.
 */
export function crashLoopRecheckMs(
  loops: readonly CrashLoopReport[],
  live: boolean,
  fallbackMs: number,
): number | false {
  const calms = loops.length
    ? Math.max(
        RECHECK_MARGIN_MS,
        Math.min(...loops.map((loop) => loop.calmsInMs)) + RECHECK_MARGIN_MS,
      )
    : Infinity;
  const next = Math.min(calms, live ? Infinity : fallbackMs);
  return Number.isFinite(next) ? next : false;
}
