import type { ReadingPoint } from "@/lib/power/queries/ups-readings";

/**
 * Readings as uPlot's columns: time in seconds, the on-battery band (100 while on battery, a gap
 * on mains), charge in %, runtime in minutes. A reading without a reliable value is a gap, never
 * a zero: "could not ask" must not draw as "empty battery".
 */
export type ChartColumns = {
  data: [number[], (number | null)[], (number | null)[], (number | null)[]];
  last: ReadingPoint | null;
};

export function toColumns(points: readonly ReadingPoint[]): ChartColumns {
  const data: ChartColumns["data"] = [[], [], [], []];
  for (const point of points) {
    data[0].push(Date.parse(point.at) / 1000);
    data[1].push(point.onBattery ? 100 : null);
    data[2].push(point.chargePercent);
    data[3].push(point.runtimeSeconds === null ? null : point.runtimeSeconds / 60);
  }
  return { data, last: points.at(-1) ?? null };
}

/**
 * The columns with the readings that came after the last one shown (an answer may repeat the
 * last point: its window starts at it), dropping what fell out of the window on the left.
 */
export function appendReadings(
  columns: ChartColumns,
  points: readonly ReadingPoint[],
  windowStartMs: number,
): ChartColumns {
  const lastMs = columns.last ? Date.parse(columns.last.at) : -Infinity;
  const fresh = points.filter((point) => Date.parse(point.at) > lastMs);
  const added = toColumns(fresh);
  const start = windowStartMs / 1000;
  const keepFrom = columns.data[0].findIndex((t) => t >= start);
  const cut = keepFrom === -1 ? columns.data[0].length : keepFrom;
  const data = columns.data.map((column, i) => [
    ...column.slice(cut),
    ...added.data[i as 0 | 1 | 2 | 3],
  ]) as ChartColumns["data"];
  return { data, last: added.last ?? columns.last };
}
