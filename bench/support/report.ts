/**
 * One result line of a benchmark: label, value, unit. Counts print as they are, other values
 * whole from 100 up and with two decimals below; a value there is none of (NaN) prints `n/a`.
 */
export function report(label: string, value: number, unit: string) {
  const text = !Number.isFinite(value)
    ? "n/a"
    : Number.isInteger(value)
      ? String(value)
      : value.toFixed(value >= 100 ? 0 : 2);
  console.log(`${label}: ${text} ${unit}`);
}

/** The p-th percentile of the values (any order); NaN when there are none. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
