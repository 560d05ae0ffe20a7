import { formatSpan } from "./format-span";

/**
 * A crash loop: a process of the console restarted `restarts` times or more within the last
 * `windowMs`. It is over once fewer restarts than that fall within the window, which happens by
 * itself as time passes without new ones. One rule for every reader: the supervisor's log lines
 * ("CRASH LOOP", "crash loop is over") and the notifications sent for them (their words are the
 * log's, below), and the console's banner (lib/supervisor/crash-loops.ts), so neither the page
 * nor a message says something the log does not.
 */
export type CrashLoopRule = { restarts: number; windowMs: number };

export const CRASH_LOOP: CrashLoopRule = { restarts: 5, windowMs: 5 * 60_000 };

export type Restart = { endedAt: Date; ending: string };

export type CrashLoop = {
  /** Restarts within the window. */
  restarts: number;
  /** How the latest run ended, and when. */
  lastEnding: string;
  lastEndedAt: Date;
  /** When the loop is over if no restart comes meanwhile. */
  calmsAt: Date;
};

/** The restarts of one process (any order) as a crash loop at `now`, or null if it is not in one. */
export function crashLoopOf(
  restarts: readonly Restart[],
  now: Date,
  rule: CrashLoopRule = CRASH_LOOP,
): CrashLoop | null {
  const since = now.getTime() - rule.windowMs;
  const recent = restarts
    .filter((r) => r.endedAt.getTime() > since && r.endedAt.getTime() <= now.getTime())
    .sort((a, b) => a.endedAt.getTime() - b.endedAt.getTime());
  if (recent.length < rule.restarts) return null;
  const last = recent[recent.length - 1]!;
  // Over when only rule.restarts - 1 remain in the window: once the one before them leaves it.
  const leaving = recent[recent.length - rule.restarts]!;
  return {
    restarts: recent.length,
    lastEnding: last.ending,
    lastEndedAt: last.endedAt,
    calmsAt: new Date(leaving.endedAt.getTime() + rule.windowMs),
  };
}

/**
 * That a crash loop began, as the log (after `CRASH LOOP: `, followed by "; the lines above say
 * why it ends.") and the notification say it.
 */
export function crashLoopBeganText(
  service: string,
  loop: CrashLoop,
  rule: CrashLoopRule,
  maxDelayMs: number,
): string {
  return (
    `the ${service} restarted ${loop.restarts} times within ${formatSpan(rule.windowMs)} ` +
    `(last: ${loop.lastEnding}). It keeps being restarted, at most ${formatSpan(maxDelayMs)} apart`
  );
}

/** That a crash loop is over, as the log and the notification say it. */
export function crashLoopOverText(service: string, rule: CrashLoopRule): string {
  return (
    `the ${service}'s crash loop is over: fewer than ${rule.restarts} restarts within the ` +
    `last ${formatSpan(rule.windowMs)}`
  );
}
