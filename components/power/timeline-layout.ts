/*
 * Where each bar of a power run's timeline goes: pure, so the picture's rules are tested without
 * a browser. Positions are percentages of the time axis (the SVG draws them as `x="12.5%"`, which
 * the page's Content-Security-Policy allows where an inline style would not).
 */

export type LayoutAction = {
  id: number;
  lane: string;
  startedAt: string;
  finishedAt: string | null;
};

export type Bar<A extends LayoutAction> = {
  action: A;
  xPct: number;
  widthPct: number;
  /** The sub-row within its lane: bars that would overlap are stacked, never drawn on top. */
  row: number;
  durationMs: number;
  /** Still in flight: it grows with the console's clock until it ends. */
  open: boolean;
  /**
   * Too narrow to hold its label (dry-run's instant would-do, a 0-ms bar): the label is drawn
   * beside it, readable, to its right — or to its left near the axis's end (`labelBefore`).
   */
  labelOutside: boolean;
  labelBefore: boolean;
};

export type TimelineLayout<A extends LayoutAction> = {
  spanMs: number;
  ticks: { pct: number; seconds: number }[];
  lanes: { name: string; rows: number; bars: Bar<A>[] }[];
};

/** An action that takes no time (dry-run's would-do) still gets a bar one can see and point at. */
export const MIN_BAR_PCT = 1.5;
/** Narrower than this, a bar's label goes beside it. */
export const LABEL_INSIDE_MIN_PCT = 18;
/** The room a label beside its bar takes on the axis: no other bar of the row goes there. */
export const LABEL_ROOM_PCT = 28;
const TICK_STEPS_S = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
const MAX_TICKS = 8;

/** The axis step: the smallest of the usual steps that keeps the ticks to a handful. */
export function tickStepSeconds(spanMs: number): number {
  const span = spanMs / 1000;
  return TICK_STEPS_S.find((step) => span / step <= MAX_TICKS) ?? Math.ceil(span / MAX_TICKS);
}

/**
 * The axis runs from the run's start (or its first action, if earlier) to its end — or, while it
 * runs, to `nowMs`, so open bars and the axis grow together.
 */
export function layoutTimeline<A extends LayoutAction>(input: {
  lanes: readonly string[];
  actions: readonly A[];
  runStartedAt: string;
  runFinishedAt: string | null;
  nowMs: number;
}): TimelineLayout<A> {
  const endOf = (a: A) => (a.finishedAt ? Date.parse(a.finishedAt) : input.nowMs);
  const starts = input.actions.map((a) => Date.parse(a.startedAt));
  const t0 = Math.min(Date.parse(input.runStartedAt), ...starts);
  const t1 = Math.max(
    input.runFinishedAt ? Date.parse(input.runFinishedAt) : input.nowMs,
    ...input.actions.map(endOf),
  );
  // A run that took no measurable time still gets a one-second axis.
  const spanMs = Math.max(t1 - t0, 1000);
  const pct = (ms: number) => ((ms - t0) / spanMs) * 100;

  const step = tickStepSeconds(spanMs);
  const ticks: { pct: number; seconds: number }[] = [];
  for (let s = 0; s * 1000 <= spanMs + 1e-6; s = round(s + step)) {
    ticks.push({ pct: pct(t0 + s * 1000), seconds: s });
  }

  const lanes = input.lanes.map((name) => {
    const rowEnds: number[] = [];
    const bars = input.actions
      .filter((a) => a.lane === name)
      .map((action) => {
        const start = Date.parse(action.startedAt);
        const end = Math.max(endOf(action), start);
        const xPct = Math.min(pct(start), 100 - MIN_BAR_PCT);
        const widthPct = Math.max(pct(end) - pct(start), MIN_BAR_PCT);
        const labelOutside = widthPct < LABEL_INSIDE_MIN_PCT;
        const labelBefore = labelOutside && xPct + widthPct + LABEL_ROOM_PCT > 100;
        const from = labelBefore ? Math.max(0, xPct - LABEL_ROOM_PCT) : xPct;
        const to =
          labelOutside && !labelBefore ? xPct + widthPct + LABEL_ROOM_PCT : xPct + widthPct;
        let row = rowEnds.findIndex((rowEnd) => rowEnd <= from);
        if (row === -1) row = rowEnds.push(0) - 1;
        rowEnds[row] = to;
        return {
          action,
          xPct,
          widthPct,
          row,
          durationMs: end - start,
          open: !action.finishedAt,
          labelOutside,
          labelBefore,
        };
      });
    return { name, rows: Math.max(rowEnds.length, 1), bars };
  });
  return { spanMs, ticks, lanes };
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
