"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { abortRunAction } from "@/lib/actions/abort-run";
import type { ShutdownCallView, ShutdownRunView } from "@/lib/power/queries/shutdown-run";
import type { RunDetail } from "@/lib/runs/get-run";
import { useCan } from "../actor-context";
import { ConfirmDialog } from "../confirm-dialog";
import { formatClock, formatDateTime } from "../format";
import { liveKeys } from "../live-keys";
import { useFallbackRefetchInterval } from "../live-provider";
import { LogViewer } from "../log-viewer/log-viewer";
import { PhaseLine } from "../phase-line";
import { fetchJson } from "../queries";
import { RunEvents } from "../run-log";
import { isAbortRequested } from "../run-state";
import { StepTimeline } from "../step-timeline";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

const CALL_STATE: Record<ShutdownCallView["state"], string> = {
  would_send: "would send (dry-run: nothing sent)",
  sending: "sending…",
  sent: "sent",
  failed: "failed",
  unknown: "sent, outcome unknown (the worker stopped mid-call; never sent twice)",
};

/**
 * The latest power-shutdown run, live: its phase line and step timeline (the same components as
 * a host's onboarding), what was sent — or would have been — to each target, its events and log,
 * and Abort for operators.
 */
export function ShutdownRunPanel({ initial }: { initial: ShutdownRunView | null }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data } = useQuery({
    queryKey: powerKeys.shutdownRun,
    queryFn: async () =>
      (await fetchJson<{ shutdown: ShutdownRunView | null }>("/api/power/shutdown-run")).shutdown,
    initialData: initial,
    refetchInterval,
  });
  return (
    <section className="panel" aria-labelledby="shutdown-heading" data-testid="shutdown-run">
      <h2 id="shutdown-heading">Shutdown run</h2>
      {data ? (
        <ShutdownRun key={data.run.id} view={data} />
      ) : (
        <p className="muted" data-testid="shutdown-run-none">
          No shutdown has run. When a trigger fires, its run shows here live.
        </p>
      )}
    </section>
  );
}

function ShutdownRun({ view }: { view: ShutdownRunView }) {
  const refetchInterval = useFallbackRefetchInterval();
  // The run's own key: the live stream's run messages move its phase line and timeline.
  const { data: run } = useQuery({
    queryKey: liveKeys.run(view.run.id),
    queryFn: () => fetchJson<RunDetail>(`/api/runs/${encodeURIComponent(view.run.id)}`),
    initialData: view.run,
    refetchInterval,
  });
  return (
    <>
      <div className="panel-head">
        <p className="phase">
          <PhaseLine run={run} testId="shutdown-phase-line" />
        </p>
        <AbortShutdown run={run} />
      </div>
      <p className="muted small">
        Started{" "}
        <time dateTime={run.createdAt} suppressHydrationWarning>
          {formatDateTime(run.createdAt)}
        </time>
        {run.finishedAt && (
          <>
            {" · finished "}
            <time dateTime={run.finishedAt} suppressHydrationWarning>
              {formatDateTime(run.finishedAt)}
            </time>
          </>
        )}
      </p>
      <StepTimeline steps={run.timeline} phase={run.phase} />
      <h3>Calls</h3>
      {view.calls.length === 0 ? (
        <p className="muted">No call yet.</p>
      ) : (
        <table className={styles.table} data-testid="shutdown-calls">
          <thead>
            <tr>
              <th scope="col">Target</th>
              <th scope="col">State</th>
              <th scope="col">Request</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {view.calls.map((call) => (
              <tr
                key={call.targetId}
                data-testid={`shutdown-call-${call.targetName}`}
                data-state={call.state}
              >
                <th scope="row">{call.targetName}</th>
                <td>
                  {CALL_STATE[call.state]}
                  {call.detail && <div className="muted small">{call.detail}</div>}
                </td>
                <td className={styles.request}>{call.request}</td>
                <td className={styles.time}>
                  <time dateTime={call.startedAt} suppressHydrationWarning>
                    {formatClock(call.startedAt)}
                  </time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Events</h3>
      <RunEvents events={run.events} />
      <h3>Log</h3>
      <LogViewer key={run.id} run={run} />
    </>
  );
}

function AbortShutdown({ run }: { run: RunDetail }) {
  const queryClient = useQueryClient();
  const canAct = useCan("operator");
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  if (!canAct || run.status !== "running") return null;
  const requested = isAbortRequested(run);
  const abort = () =>
    startTransition(async () => {
      setError(null);
      const result = await abortRunAction({ runId: run.id });
      if (result.ok) setConfirming(false);
      else setError(result.message);
      await queryClient.invalidateQueries({ queryKey: liveKeys.run(run.id) });
    });
  return (
    <div className="run-controls">
      <button
        type="button"
        className="button button-danger"
        disabled={requested || pending}
        onClick={() => {
          setError(null);
          setConfirming(true);
        }}
        data-testid="shutdown-abort-button"
      >
        {requested ? "Abort requested…" : "Abort shutdown"}
      </button>
      <ConfirmDialog
        open={confirming}
        title="Abort the power shutdown"
        confirmLabel="Abort shutdown"
        pending={pending}
        error={error}
        onConfirm={abort}
        onCancel={() => setConfirming(false)}
        testId="shutdown-abort-dialog"
      >
        <p>
          Stop this shutdown run at <strong>{run.currentStep}</strong>? Targets already sent their
          shutdown keep shutting down; the targets not yet called are <strong>not</strong> shut down
          by this run, even if the battery runs out.
        </p>
      </ConfirmDialog>
    </div>
  );
}
