/** One result line of a benchmark: label, value (whole above 100, else two decimals), unit. */
export function report(label: string, value: number, unit: string) {
  console.log(`${label}: ${value.toFixed(value >= 100 ? 0 : 2)} ${unit}`);
}

/** The p-th percentile of the values (any order); NaN when there are none. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
