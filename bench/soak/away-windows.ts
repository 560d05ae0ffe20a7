/** A stretch of time (ms since the epoch); `to` null: not over yet. */
export type Window = { from: number; to: number | null };

/** How much of [from, to] the windows cover (an open window counts up to `to`); no overlaps counted twice. */
export function coveredMs(windows: readonly Window[], from: number, to: number): number {
  const spans = windows
    .map((w) => [Math.max(w.from, from), Math.min(w.to ?? to, to)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let covered = 0;
  let reached = from;
  for (const [a, b] of spans) {
    const start = Math.max(a, reached);
    if (b > start) covered += b - start;
    reached = Math.max(reached, b);
  }
  return covered;
}
