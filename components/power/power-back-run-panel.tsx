"use client";

import { useQuery } from "@tanstack/react-query";
import type { PowerBackPageView } from "@/lib/power/queries/power-back-run";
import { useFallbackRefetchInterval, useLiveMessages } from "../live-provider";
import { LogViewer } from "../log-viewer/log-viewer";
import { PhaseLine } from "../phase-line";
import { fetchJson } from "../queries";
import { RunEvents } from "../run-log";
import { StepTimeline } from "../step-timeline";
import { powerKeys } from "./power-keys";
import { useLiveRefresh } from "./power-refresh";
import { PowerRunVerdictLine } from "./run-verdict";
import { AbortPowerRun } from "./shutdown-run-panel";
import { RunTimesLine } from "./run-times-line";

/**
 * The power page's way back — the latest run and what Bring back now would do — one query for
 * the card and the button's dialog alike, refreshed by the live stream (powerKeysFor).
 */
export function usePowerBackView(initial: PowerBackPageView): PowerBackPageView {
  const refetchInterval = useFallbackRefetchInterval();
  const { data } = useQuery({
    queryKey: powerKeys.powerBack,
    queryFn: () => fetchJson<PowerBackPageView>("/api/power/power-back"),
    initialData: initial,
    refetchInterval,
  });
  return data;
}

/**
 * The way back after an outage, live, beside the latest shutdown run: its one line (decided from
 * what the run recorded, never from what it set out to do), the one thing it waits for on the
 * phase line, who started it, its steps (skipped and dry-run ones said so), events and log, and
 * Abort. Shown while a way back runs and after one answered the latest outage; nothing otherwise.
 */
export function PowerBackRunPanel({ initial }: { initial: PowerBackPageView }) {
  const data = usePowerBackView(initial).powerBack;
  // Each tick of the run commits a run message (its phase line changes with it): the whole view
  // follows, so the verdict, the phase and the steps never disagree. A new way back announces
  // itself with its power_back.started event (powerKeysFor).
  const runId = data?.run.id;
  const refresh = useLiveRefresh(powerKeys.powerBack);
  useLiveMessages((message) => {
    if (message.type === "run" && message.runId === runId) refresh();
  });
  if (!data) return null;
  const run = data.run;
  return (
    <section className="panel" aria-labelledby="power-back-heading" data-testid="power-back-run">
      <h2 id="power-back-heading">Latest way back</h2>
      <div className="panel-head">
        <div>
          <PowerRunVerdictLine verdict={data.verdict} testId="power-back-verdict" />
          {run.status === "running" && (
            <div className="phase">
              <PhaseLine run={run} testId="power-back-phase-line" />
            </div>
          )}
        </div>
        <AbortPowerRun
          run={run}
          queryKey={powerKeys.powerBack}
          label="Abort the way back"
          title="Abort the way back"
          testId="power-back-abort"
        >
          <p>
            Stop this way back at <strong>{run.currentStep}</strong>? Hosts already powered on stay
            on and guests already started keep running; the hosts and guests not yet reached are{" "}
            <strong>not</strong> brought back by this run — power them on and start them by hand, or
            Bring back now again.
          </p>
        </AbortPowerRun>
      </div>
      <RunTimesLine
        run={run}
        origin={data.origin}
        originTestId="power-back-origin"
        timelineTestId="power-back-timeline-link"
      />
      <details className="run-details" data-testid="power-back-run-details">
        <summary>Steps, events and log</summary>
        <StepTimeline steps={run.timeline} phase={run.phase} verdicts={data.steps} />
        <h3>Events</h3>
        <RunEvents events={run.events} />
        <h3>Log</h3>
        <LogViewer key={run.id} run={run} outcome={data.verdict} />
      </details>
    </section>
  );
}
