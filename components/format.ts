/** Pure formatting helpers shared by the console's components (tested in format.test.ts). */

/**
 * Elapsed time as an operator reads it at a glance: `42s`, `3m 07s`, `1h 02m 05s`.
 * Negative input (browser clock behind the server's) shows as `0s` rather than nonsense.
 */
export function formatElapsed(seconds: number): string {
  const total = Number.isFinite(seconds) ? Math.max(0, Math.floor(seconds)) : 0;
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (h > 0) return `${h}h ${pad(m)}m ${pad(s)}s`;
  if (m > 0) return `${m}m ${pad(s)}s`;
  return `${s}s`;
}

/**
 * A text whose durations ("3 min 20 s", "5m 00s", "10 s") never break inside: the spaces within
 * one become non-breaking. Everything else is left as it is.
 */
export function keepDurationsWhole(text: string): string {
  return text
    .replace(/(\d) (h|min|ms|s|m)\b/g, "$1\u00a0$2")
    .replace(/\b(\d+(?:h|min|m)) (\d)/g, "$1\u00a0$2")
    .replace(/\b(h|min) (\d)/g, "$1\u00a0$2");
}

/** Seconds from an ISO timestamp to `nowMs`. */
export function secondsSince(iso: string, nowMs: number): number {
  return (nowMs - Date.parse(iso)) / 1000;
}

/**
 * A host key fingerprint short enough for a table cell, still enough to tell hosts apart:
 * `SHA256:AbCdEfGh…wXyZ`. The full value belongs on the host page (and in the cell's title).
 */
export function shortFingerprint(fingerprint: string): string {
  const [algorithm, hash] = fingerprint.includes(":")
    ? [
        fingerprint.slice(0, fingerprint.indexOf(":")),
        fingerprint.slice(fingerprint.indexOf(":") + 1),
      ]
    : ["", fingerprint];
  const short = hash.length > 14 ? `${hash.slice(0, 8)}…${hash.slice(-4)}` : hash;
  return algorithm ? `${algorithm}:${short}` : short;
}

/** Wall-clock time for events and log lines, in the operator's locale, with seconds. */
export function formatClock(iso: string): string {
  const date = new Date(iso);
  return date.toLocaleTimeString(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** Date and time, for "finished at" and similar. */
export function formatDateTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
  });
}
