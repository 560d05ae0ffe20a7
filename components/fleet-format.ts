/** Formatting for the fleet view (tested in fleet-format.test.ts). */

/** How long ago, coarse enough to read at a glance: `just now`, `42 s ago`, `5 min ago`, `3 h ago`, `12 d ago`. */
export function formatAgo(seconds: number): string {
  const s = Number.isFinite(seconds) ? Math.max(0, Math.floor(seconds)) : 0;
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** `Showing 51–100 of 1 234 hosts` (thin spaces keep big numbers readable). */
export function describeRange(
  page: { number: number; size: number },
  shown: number,
  total: number,
): string {
  if (total === 0 || shown === 0) return `No hosts on this page (of ${formatCount(total)})`;
  const first = (page.number - 1) * page.size + 1;
  return `Showing ${formatCount(first)}–${formatCount(first + shown - 1)} of ${formatCount(total)}`;
}

export function formatCount(n: number): string {
  return n.toLocaleString("en-US").replace(/,/g, "\u2009");
}
