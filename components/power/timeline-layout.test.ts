import { describe, expect, it } from "vitest";
import { layoutTimeline, MIN_BAR_PCT, tickStepSeconds } from "./timeline-layout";

const T0 = Date.parse("2026-12-01T12:00:00.000Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();
const action = (id: number, lane: string, from: number, to: number | null) => ({
  id,
  lane,
  startedAt: at(from),
  finishedAt: to === null ? null : at(to),
});

describe("the timeline's layout", () => {
  it("places each bar by its start and duration on an axis from the run's start to its end", () => {
    const layout = layoutTimeline({
      lanes: ["cluster", "pve1"],
      actions: [action(1, "cluster", 0, 5), action(2, "pve1", 5, 10)],
      runStartedAt: at(0),
      runFinishedAt: at(10),
      nowMs: T0 + 60_000,
    });
    expect(layout.spanMs).toBe(10_000);
    const [cluster, node] = layout.lanes;
    expect(cluster!.bars[0]).toMatchObject({
      xPct: 0,
      widthPct: 50,
      durationMs: 5000,
      open: false,
    });
    expect(node!.bars[0]).toMatchObject({ xPct: 50, widthPct: 50, row: 0 });
  });

  it("lets a bar still in flight grow with the console's clock while the run goes on", () => {
    const layout = layoutTimeline({
      lanes: ["pve1"],
      actions: [action(1, "pve1", 2, null)],
      runStartedAt: at(0),
      runFinishedAt: null,
      nowMs: T0 + 8000,
    });
    expect(layout.spanMs).toBe(8000);
    expect(layout.lanes[0]!.bars[0]).toMatchObject({ xPct: 25, widthPct: 75, open: true });
  });

  it("stacks bars of one lane that would overlap (dry-run's instant actions) instead of hiding one", () => {
    const layout = layoutTimeline({
      lanes: ["cluster"],
      actions: [action(1, "cluster", 0, 0), action(2, "cluster", 0, 0), action(3, "cluster", 5, 6)],
      runStartedAt: at(0),
      runFinishedAt: at(10),
      nowMs: T0,
    });
    const lane = layout.lanes[0]!;
    expect(lane.bars.map((b) => b.row)).toEqual([0, 1, 0]);
    expect(lane.rows).toBe(2);
    expect(lane.bars[0]!.widthPct).toBe(MIN_BAR_PCT);
  });

  it("draws a 0-ms bar at its minimum width with its label beside it, readable, and keeps that room free", () => {
    const layout = layoutTimeline({
      lanes: ["pve1", "pve2"],
      actions: [action(1, "pve1", 0, 0), action(2, "pve1", 1, 1), action(3, "pve2", 10, 10)],
      runStartedAt: at(0),
      runFinishedAt: at(10),
      nowMs: T0,
    });
    const [first, second] = layout.lanes[0]!.bars;
    expect(first).toMatchObject({ widthPct: MIN_BAR_PCT, labelOutside: true, labelBefore: false });
    // The second starts within the first's label: a row of its own, never drawn over it.
    expect([first!.row, second!.row]).toEqual([0, 1]);
    // At the axis's end the label goes before the bar.
    expect(layout.lanes[1]!.bars[0]).toMatchObject({ labelOutside: true, labelBefore: true });
  });

  it("keeps a planned lane with no action yet, empty", () => {
    const layout = layoutTimeline({
      lanes: ["pve1", "pve2"],
      actions: [action(1, "pve1", 0, 1)],
      runStartedAt: at(0),
      runFinishedAt: null,
      nowMs: T0 + 2000,
    });
    expect(layout.lanes.map((l) => [l.name, l.bars.length, l.rows])).toEqual([
      ["pve1", 1, 1],
      ["pve2", 0, 1],
    ]);
  });

  it("ticks the axis in round steps, a handful of them", () => {
    expect(tickStepSeconds(1000)).toBe(0.2);
    expect(tickStepSeconds(300_000)).toBe(60);
    const layout = layoutTimeline({
      lanes: [],
      actions: [],
      runStartedAt: at(0),
      runFinishedAt: at(40),
      nowMs: T0,
    });
    expect(layout.ticks.map((t) => t.seconds)).toEqual([0, 5, 10, 15, 20, 25, 30, 35, 40]);
    expect(layout.ticks.at(-1)!.pct).toBe(100);
  });
});
