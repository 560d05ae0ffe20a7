/**
 * How long the supervisor waits before starting a process that ended again: 1 s, doubling up to
 * 30 s while it keeps ending; once a run stayed up for `stableMs`, the next ending starts over at
 * 1 s. No jitter (unlike the live listener's reconnects): one supervisor restarts one process,
 * there is no crowd to spread out, and the log's "restarting it in 4 s" stays exact.
 */
export type RestartBackoff = { initialMs: number; maxMs: number; stableMs: number };

export const RESTART_BACKOFF: RestartBackoff = {
  initialMs: 1_000,
  maxMs: 30_000,
  stableMs: 60_000,
};

/** The delay before restart number `consecutive` (1 = the first since the process was stable). */
export function restartDelayMs(consecutive: number, backoff: RestartBackoff): number {
  const doublings = Math.min(Math.max(consecutive - 1, 0), 30);
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** doublings);
}
