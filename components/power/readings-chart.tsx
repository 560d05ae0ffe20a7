"use client";

import { useCallback, useEffect, useRef, useState } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { ReadingPoint, ReadingSeries } from "@/lib/power/queries/ups-readings";
import { formatElapsed } from "../format";
import { FALLBACK_POLL_MS, useLiveStatus, usePowerLiveMessages } from "../live-provider";
import { fetchJson } from "../queries";
import styles from "./power.module.css";
import { appendReadings, toColumns, type ChartColumns } from "./readings-columns";

const WINDOWS = [
  { label: "1 hour", ms: 3_600_000 },
  { label: "6 hours", ms: 6 * 3_600_000 },
  { label: "24 hours", ms: 24 * 3_600_000 },
] as const;
const HEIGHT = 240;

/** One live chart per UPS: charge and runtime over the chosen window, outages shaded. */
export function ReadingsCharts({ ups }: { ups: { id: string; name: string }[] }) {
  const [windowMs, setWindowMs] = useState<number>(WINDOWS[1].ms);
  if (ups.length === 0) return null;
  return (
    <section className={`panel ${styles.chartPanel}`} aria-labelledby="chart-heading">
      <div className="panel-head">
        <h2 id="chart-heading">Charge and runtime</h2>
        <label className={`small ${styles.chartControls}`}>
          Show the last{" "}
          <select
            className="control"
            value={windowMs}
            onChange={(event) => setWindowMs(Number(event.target.value))}
            data-testid="chart-window"
          >
            {WINDOWS.map((w) => (
              <option key={w.ms} value={w.ms}>
                {w.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <p className="muted small">
        Shaded: on battery. A gap: no reliable reading. Each new reading is appended as it arrives.
      </p>
      {ups.map((u) => (
        <ReadingsChart key={`${u.id}-${windowMs}`} upsId={u.id} name={u.name} windowMs={windowMs} />
      ))}
    </section>
  );
}

function readingsUrl(upsId: string, from: Date): string {
  const params = new URLSearchParams({ upsId, from: from.toISOString() });
  return `/api/power/readings?${params.toString()}`;
}

function ReadingsChart({
  upsId,
  name,
  windowMs,
}: {
  upsId: string;
  name: string;
  windowMs: number;
}) {
  const container = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const columns = useRef<ChartColumns>(toColumns([]));
  const busy = useRef(false);
  const again = useRef(false);
  const [last, setLast] = useState<ReadingPoint | null>(null);
  const [count, setCount] = useState(0);
  const [error, setError] = useState<string | null>(null);

  const show = useCallback((next: ChartColumns) => {
    columns.current = next;
    plot.current?.setData(next.data);
    setCount(next.data[0].length);
    setLast(next.last);
  }, []);

  /**
   * Reads the whole window (first, and after the live stream was down: messages sent meanwhile
   * were lost), or only what came after the last point. One request at a time; a message that
   * arrives meanwhile asks for one more round.
   */
  const load = useCallback(
    async (whole: boolean) => {
      if (busy.current) {
        again.current = true;
        return;
      }
      busy.current = true;
      try {
        do {
          again.current = false;
          const now = Date.now();
          const lastAt = columns.current.last?.at;
          const from = whole || !lastAt ? new Date(now - windowMs) : new Date(lastAt);
          const series = await fetchJson<ReadingSeries>(readingsUrl(upsId, from));
          show(
            whole || !lastAt
              ? toColumns(series.points)
              : appendReadings(columns.current, series.points, now - windowMs),
          );
          whole = false;
          setError(null);
        } while (again.current);
      } catch (failure) {
        setError(failure instanceof Error ? failure.message : String(failure));
      } finally {
        busy.current = false;
      }
    },
    [upsId, windowMs, show],
  );

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const chart = new uPlot(
      chartOptions(element.clientWidth || 600, windowMs),
      columns.current.data,
      element,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() => {
      chart.setSize({ width: element.clientWidth, height: HEIGHT });
    });
    resize.observe(element);
    void load(true);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [load, windowMs]);

  usePowerLiveMessages((message) => {
    if (message.upsId === upsId) void load(false);
  });

  // While the stream is down, poll; when it is back, re-read the window (messages were lost).
  const status = useLiveStatus();
  const wasLive = useRef(status === "live");
  useEffect(() => {
    if (status === "live") {
      if (!wasLive.current) void load(true);
      wasLive.current = true;
      return;
    }
    wasLive.current = false;
    const timer = setInterval(() => void load(false), FALLBACK_POLL_MS);
    return () => clearInterval(timer);
  }, [status, load]);

  return (
    <figure
      className="chart-figure"
      data-testid={`readings-chart-${name}`}
      data-points={count}
      data-last-at={last?.at ?? ""}
      data-last-charge={last?.chargePercent ?? ""}
      data-last-on-battery={last?.onBattery === null || !last ? "" : String(last.onBattery)}
    >
      <figcaption>
        <strong>{name}</strong>{" "}
        <span className="muted small">
          {count === 0
            ? "no readings in this window"
            : `${count} readings; latest ${
                last?.chargePercent != null ? `${Math.round(last.chargePercent)} %` : "charge —"
              }, ${last?.runtimeSeconds != null ? formatElapsed(last.runtimeSeconds) : "runtime —"}`}
        </span>
      </figcaption>
      {error && (
        <p className="notice notice-warning small" role="status">
          Could not read the readings: {error}
        </p>
      )}
      <div
        ref={container}
        className={styles.chart}
        role="img"
        aria-label={`${name}: battery charge and runtime over time`}
      />
    </figure>
  );
}

function chartOptions(width: number, windowMs: number): uPlot.Options {
  return {
    width,
    height: HEIGHT,
    cursor: { drag: { x: false, y: false } },
    scales: {
      // The whole window up to now, whatever part of it has readings: a quiet UPS reads as quiet.
      x: { time: true, range: () => [(Date.now() - windowMs) / 1000, Date.now() / 1000] },
      pct: { range: [0, 100] },
      min: { range: (_u, _min, max) => [0, Math.max(1, (max ?? 0) * 1.1)] },
    },
    series: [
      {},
      {
        label: "On battery",
        scale: "pct",
        stroke: "transparent",
        fill: "rgba(215, 154, 0, 0.15)",
        paths: uPlot.paths.stepped!({ align: 1 }),
        points: { show: false },
        value: (_u, v) => (v == null ? "no" : "yes"),
      },
      {
        label: "Charge",
        scale: "pct",
        stroke: "#1d6b3a",
        width: 2,
        value: (_u, v) => (v == null ? "—" : `${v.toFixed(0)} %`),
      },
      {
        label: "Runtime",
        scale: "min",
        stroke: "#1f5fbf",
        width: 2,
        value: (_u, v) => (v == null ? "—" : `${v.toFixed(1)} min`),
      },
    ],
    axes: [
      {},
      { scale: "pct", values: (_u, ticks) => ticks.map((t) => `${t} %`) },
      {
        scale: "min",
        side: 1,
        size: 64,
        grid: { show: false },
        values: (_u, ticks) => ticks.map((t) => `${t} min`),
      },
    ],
  };
}
