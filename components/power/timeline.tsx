"use client";

import { useQuery } from "@tanstack/react-query";
import { useState, useSyncExternalStore } from "react";
import { formatDuration } from "@/lib/logs/text";
import type { RunOrigin } from "@/lib/power/shutdown/run-origin";
import type { PowerBackOrigin } from "@/lib/power/queries/power-back-verdict";
import type { ShedOrigin } from "@/lib/power/queries/shed-view";
import type { RunTimeline, TimelineAction } from "@/lib/power/queries/timeline";
import { OUTPUT_CYCLE_LABEL } from "@/lib/power/records/output-cycle-label";
import { formatClock, formatDateTime } from "../format";
import { liveKeys } from "../live-keys";
import { useFallbackRefetchInterval, usePowerLiveMessages } from "../live-provider";
import { fetchJson } from "../queries";
import { useLiveRefresh } from "./power-refresh";
import { layoutTimeline, type Bar } from "./timeline-layout";
import { PowerRunVerdictLine } from "./run-verdict";
import { useConsoleNow } from "./use-console-now";
import styles from "./timeline.module.css";

type Outcome = NonNullable<TimelineAction["outcome"]> | "open";

const OUTCOME: Record<Outcome, { word: string; className: string }> = {
  ok: { word: "done, verified", className: styles.ok! },
  failed: { word: "failed", className: styles.failed! },
  "timed-out": { word: "timed out", className: styles.timedOut! },
  unknown: { word: "outcome unknown", className: styles.unknown! },
  "would-do": { word: "would do (dry-run: nothing sent)", className: styles.wouldDo! },
  open: { word: "in flight", className: styles.open! },
};

const ROW_PX = 24;
const RUNNING_POLL_MS = 2000;
const noSubscription = () => () => {};
const AXIS_PX = 20;

/**
 * The run's timeline key lives under the run's own key, so every live message about the run
 * (each tick commits one) refreshes it, as the power events of its calls do.
 */
export const timelineKey = (runId: string) => [...liveKeys.run(runId), "power-timeline"] as const;

export function describeOrigin(origin: RunOrigin | PowerBackOrigin | ShedOrigin): string {
  switch (origin.kind) {
    case "shed":
      return `Early shedding: started by the power monitor — ${origin.why}`;
    case "shed-back":
      return `Shed guests started again: ${origin.why}`;
    case "way-back":
      return origin.by === "admin"
        ? `Way back: brought back by ${origin.name} (Bring back now)`
        : `Way back: started by the power monitor — ${origin.why}`;
    case "drill-way-back":
      return origin.live
        ? `Way back of a live drill, started by ${origin.by}: hosts really powered on`
        : `Way back of a drill, started by ${origin.by}, in dry-run: nothing sent`;
    case "drill":
      return origin.live
        ? `Live drill of ${origin.upsName}'s outage, started by ${origin.by}: calls really sent`
        : `Drill of ${origin.upsName}'s outage, started by ${origin.by}, in dry-run: nothing sent`;
    case "outage":
      return `Outage: ${origin.upsName} — ${origin.reason}`;
    case "unknown":
      return "Started by an earlier version of the console (its trigger is not readable here)";
  }
}

function outcomeOf(action: TimelineAction): Outcome {
  return action.outcome ?? "open";
}

/**
 * The words for an action's outcome. The UPS output cycle is the one action whose success is
 * not seen by the console (the UPS switches its output by its own delays, often after the
 * console's own power is gone): "ok" there means upsd took the command, no more; a refusal
 * before anything was sent reads as such, not as a failed send.
 */
function outcomeWord(action: TimelineAction): string {
  const outcome = outcomeOf(action);
  if (!action.label.startsWith(OUTPUT_CYCLE_LABEL)) return OUTCOME[outcome].word;
  if (outcome === "ok") return "asked: upsd accepted the command";
  if (outcome === "failed" && action.detail?.startsWith("not sent:")) return "not sent (refused)";
  if (outcome === "would-do") return "would ask (nothing sent)";
  return OUTCOME[outcome].word;
}

function describeBar(bar: Bar<TimelineAction>, runStart: number): string {
  const { action } = bar;
  const offset = formatDuration(Date.parse(action.startedAt) - runStart);
  const took = bar.open
    ? `running for ${formatDuration(bar.durationMs)}`
    : `took ${formatDuration(bar.durationMs)}`;
  return `${action.lane}: ${action.label} — ${outcomeWord(action)}; started +${offset}, ${took}`;
}

/**
 * A power run as a Gantt-style picture: a lane per node (the cluster's own lane on top), a bar
 * per action from its start to its end, coloured and worded by outcome. Live: the run's messages
 * and power events refresh it, and a bar in flight grows with the console's clock. Every bar
 * is reachable with Tab; hovering or focusing one shows its request and detail below.
 */
export function RunTimelineView({ initial }: { initial: RunTimeline }) {
  const refetchInterval = useFallbackRefetchInterval();
  const key = timelineKey(initial.run.id);
  const { data, dataUpdatedAt } = useQuery({
    queryKey: key,
    queryFn: () => fetchJson<RunTimeline>(`/api/power/runs/${encodeURIComponent(initial.run.id)}`),
    initialData: initial,
    // An action's start commits without a live message (the call it precedes may take its whole
    // deadline): while the run goes on, ask every 2 s too, so a bar in flight shows as it starts.
    refetchInterval: (query) =>
      query.state.data?.run.status === "running" ? RUNNING_POLL_MS : refetchInterval,
  });
  const refresh = useLiveRefresh(key);
  usePowerLiveMessages((message) => {
    if (message.eventId !== null) refresh();
  });
  // Until hydrated, draw with the time the answer was read: the server's picture exactly.
  const mounted = useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );
  const consoleNow = useConsoleNow(data.serverTime, dataUpdatedAt);
  const running = data.run.status === "running";
  const nowMs = mounted && running ? consoleNow : Date.parse(data.serverTime);
  const runStart = Date.parse(data.run.createdAt);
  const layout = layoutTimeline({
    lanes: data.lanes,
    actions: data.actions,
    runStartedAt: data.run.createdAt,
    runFinishedAt: data.run.finishedAt,
    nowMs,
  });
  const [selectedId, setSelectedId] = useState<number | null>(null);
  const selected = layout.lanes.flatMap((l) => l.bars).find((b) => b.action.id === selectedId);

  return (
    <div data-testid="run-timeline" data-run-status={data.run.status}>
      <div className={styles.origin} data-testid="run-origin" data-origin={data.run.origin.kind}>
        <strong>{describeOrigin(data.run.origin)}</strong>
        <PowerRunVerdictLine verdict={data.run.verdict} testId="run-verdict" />
        <span className="muted small">
          Started{" "}
          <time dateTime={data.run.createdAt} suppressHydrationWarning>
            {formatDateTime(data.run.createdAt)}
          </time>
          {data.run.finishedAt ? (
            <span className="nowrap">
              {" · ended after "}
              {formatDuration(Date.parse(data.run.finishedAt) - runStart)}
            </span>
          ) : (
            " · running"
          )}
        </span>
      </div>
      <ul className={styles.legend} aria-label="Outcomes">
        {(Object.keys(OUTCOME) as Outcome[]).map((outcome) => (
          <li key={outcome}>
            <svg className={styles.swatch} aria-hidden="true" viewBox="0 0 20 10">
              <rect
                x="0.5"
                y="0.5"
                width="19"
                height="9"
                rx="2"
                className={`${styles.barShape} ${OUTCOME[outcome].className}`}
              />
            </svg>
            {OUTCOME[outcome].word}
          </li>
        ))}
      </ul>
      {data.lanes.length === 0 ? (
        <p className="muted" data-testid="timeline-empty">
          {running ? "No action yet: the run is planning." : "This run took no action."}
        </p>
      ) : (
        <table className={styles.gantt} data-testid="timeline-gantt">
          <thead>
            <tr>
              <th scope="col" className={styles.laneHead}>
                Lane
              </th>
              <th scope="col" aria-label="Seconds since the run started">
                <svg className={styles.axis} height={AXIS_PX} aria-hidden="true">
                  {layout.ticks.map((tick) => (
                    <g key={tick.seconds}>
                      <line
                        className={styles.tick}
                        x1={`${tick.pct}%`}
                        x2={`${tick.pct}%`}
                        y1={AXIS_PX - 5}
                        y2={AXIS_PX}
                      />
                      <text
                        className={styles.tickLabel}
                        x={`${tick.pct}%`}
                        y={AXIS_PX - 8}
                        textAnchor={tick.pct > 95 ? "end" : tick.pct < 2 ? "start" : "middle"}
                      >
                        {tick.seconds} s
                      </text>
                    </g>
                  ))}
                </svg>
              </th>
            </tr>
          </thead>
          <tbody>
            {layout.lanes.map((lane) => (
              <tr key={lane.name} data-testid={`timeline-lane-${lane.name}`}>
                <th scope="row">{lane.name}</th>
                <td>
                  <svg
                    className={styles.track}
                    height={lane.rows * ROW_PX}
                    role="list"
                    aria-label={`${lane.name}: ${lane.bars.length} action(s)`}
                  >
                    {layout.ticks.map((tick) => (
                      <line
                        key={tick.seconds}
                        className={styles.tick}
                        x1={`${tick.pct}%`}
                        x2={`${tick.pct}%`}
                        y1={0}
                        y2={lane.rows * ROW_PX}
                        aria-hidden="true"
                      />
                    ))}
                    {lane.bars.map((bar) => (
                      <BarShape
                        key={bar.action.id}
                        bar={bar}
                        description={describeBar(bar, runStart)}
                        selected={bar.action.id === selectedId}
                        onSelect={() => setSelectedId(bar.action.id)}
                      />
                    ))}
                  </svg>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className={styles.detail} role="status" aria-live="polite" data-testid="timeline-detail">
        {selected ? (
          <>
            <strong>{describeBar(selected, runStart)}</strong>
            {selected.action.request && (
              <div className={styles.request}>{selected.action.request}</div>
            )}
            {selected.action.detail && <div>{selected.action.detail}</div>}
          </>
        ) : (
          <span className="muted">Point at a bar, or Tab to it, for its request and detail.</span>
        )}
      </div>
      {data.actions.length > 0 && (
        <details>
          <summary>Every action as a table</summary>
          <div className="table-scroll">
            <table className={styles.actions} data-testid="timeline-actions">
              <thead>
                <tr>
                  <th scope="col">Lane</th>
                  <th scope="col">Action</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Started</th>
                  <th scope="col">Took</th>
                  <th scope="col">Request and detail</th>
                </tr>
              </thead>
              <tbody>
                {data.actions.map((action) => (
                  <tr key={action.id} data-outcome={outcomeOf(action)}>
                    <td>{action.lane}</td>
                    <td>{action.label}</td>
                    <td>{outcomeWord(action)}</td>
                    <td>
                      <time dateTime={action.startedAt} suppressHydrationWarning>
                        {formatClock(action.startedAt)}
                      </time>
                    </td>
                    <td>
                      {action.finishedAt
                        ? formatDuration(
                            Date.parse(action.finishedAt) - Date.parse(action.startedAt),
                          )
                        : "—"}
                    </td>
                    <td>
                      {action.request && <div className={styles.request}>{action.request}</div>}
                      {action.detail}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      )}
    </div>
  );
}

function BarShape({
  bar,
  description,
  selected,
  onSelect,
}: {
  bar: Bar<TimelineAction>;
  description: string;
  selected: boolean;
  onSelect: () => void;
}) {
  const outcome = outcomeOf(bar.action);
  const y = bar.row * ROW_PX + 3;
  const height = ROW_PX - 6;
  const clipId = `timeline-clip-${bar.action.id}`;
  return (
    <g
      role="listitem"
      tabIndex={0}
      aria-label={description}
      className={`${styles.bar} ${selected ? styles.selected : ""}`}
      data-testid={`timeline-bar-${bar.action.id}`}
      data-lane={bar.action.lane}
      data-label={bar.action.label}
      data-outcome={outcome}
      onFocus={onSelect}
      onMouseEnter={onSelect}
      onClick={onSelect}
    >
      <title>{description}</title>
      <clipPath id={clipId}>
        <rect x={`${bar.xPct}%`} y={y} width={`${bar.widthPct}%`} height={height} />
      </clipPath>
      <rect
        x={`${bar.xPct}%`}
        y={y}
        width={`${bar.widthPct}%`}
        height={height}
        rx={3}
        className={`${styles.barShape} ${OUTCOME[outcome].className}`}
      />
      {bar.labelOutside ? (
        <text
          x={`${bar.labelBefore ? bar.xPct - 0.5 : bar.xPct + bar.widthPct + 0.5}%`}
          y={y + height / 2 + 4}
          textAnchor={bar.labelBefore ? "end" : "start"}
          className={styles.barLabelOutside}
        >
          {bar.action.label}
          {bar.open ? "" : ` · ${formatDuration(bar.durationMs)}`}
        </text>
      ) : (
        <text
          x={`${bar.xPct + 0.4}%`}
          y={y + height / 2 + 4}
          clipPath={`url(#${clipId})`}
          className={styles.barLabel}
        >
          {bar.action.label}
          {bar.open ? "" : ` · ${formatDuration(bar.durationMs)}`}
        </text>
      )}
    </g>
  );
}
