"use client";

import { useQuery, useQueryClient, type QueryKey } from "@tanstack/react-query";
import { useState, useTransition, type ReactNode } from "react";
import { abortRunAction } from "@/lib/actions/abort-run";
import type { ShutdownCallView, ShutdownRunView } from "@/lib/power/queries/shutdown-run";
import type { RunDetail } from "@/lib/runs/get-run";
import { useCan } from "../actor-context";
import { ConfirmDialog } from "../confirm-dialog";
import { formatClock } from "../format";
import { useFallbackRefetchInterval, useLiveMessages } from "../live-provider";
import { LogViewer } from "../log-viewer/log-viewer";
import { PhaseLine } from "../phase-line";
import { fetchJson } from "../queries";
import { RunEvents } from "../run-log";
import { isAbortRequested } from "../run-state";
import { StepTimeline } from "../step-timeline";
import { useHydrated } from "../use-now";
import { powerKeys } from "./power-keys";
import { useLiveRefresh } from "./power-refresh";
import { PowerRunVerdictLine } from "./run-verdict";
import { RunTimesLine } from "./run-times-line";
import styles from "./power.module.css";

const CALL_STATE: Record<ShutdownCallView["state"], string> = {
  would_send: "would send (dry-run: nothing sent)",
  sending: "sending…",
  sent: "sent, accepted",
  failed: "failed",
  unknown: "sent, outcome unknown (the worker stopped mid-call)",
};

/** Each target once: its latest attempt, how many there were, and whether it was seen down. */
export function callsByTarget(calls: readonly ShutdownCallView[]) {
  const byTarget = new Map<string, ShutdownCallView[]>();
  for (const call of calls)
    byTarget.set(call.targetId, [...(byTarget.get(call.targetId) ?? []), call]);
  return [...byTarget.values()].map((attempts) => ({
    latest: attempts.at(-1)!,
    first: attempts[0]!,
    attempts: attempts.length,
    seenDownAt: attempts.find((a) => a.seenDownAt)?.seenDownAt ?? null,
  }));
}

/**
 * The latest power-shutdown run, live: what it did in one line (never onboarding's words), its
 * phase line and step timeline (a step that did nothing says skipped), what was sent — or would
 * have been — to each target and whether it was seen down, its events and log, and Abort.
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
  // Each tick of the run commits a run message: the whole view (run, calls, verdicts) follows it,
  // so the verdict line and the steps never disagree with the run they describe.
  const runId = data?.run.id;
  const refresh = useLiveRefresh(powerKeys.shutdownRun);
  useLiveMessages((message) => {
    if (message.type === "run" && message.runId === runId) refresh();
  });
  return (
    <section className="panel" aria-labelledby="shutdown-heading" data-testid="shutdown-run">
      <h2 id="shutdown-heading">Latest shutdown run</h2>
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
  const run = view.run;
  const targets = callsByTarget(view.calls);
  return (
    <>
      <div className="panel-head">
        <div>
          <PowerRunVerdictLine verdict={view.verdict} testId="shutdown-verdict" />
          {run.status === "running" && (
            <div className="phase">
              <PhaseLine run={run} testId="shutdown-phase-line" />
            </div>
          )}
        </div>
        <AbortShutdown run={run} />
      </div>
      <RunTimesLine run={run} origin={view.origin} originTestId="shutdown-origin" />
      <details className="run-details" data-testid="shutdown-run-details">
        <summary>Steps, calls, events and log</summary>
        <StepTimeline steps={run.timeline} phase={run.phase} verdicts={view.steps} />
        <h3>Calls</h3>
        {targets.length === 0 ? (
          <p className="muted">No call yet.</p>
        ) : (
          <div className="table-scroll">
            <table className={`${styles.table} stack-on-phone`} data-testid="shutdown-calls">
              <thead>
                <tr>
                  <th scope="col">Target</th>
                  <th scope="col">State</th>
                  <th scope="col">Request</th>
                  <th scope="col">When</th>
                </tr>
              </thead>
              <tbody>
                {targets.map(({ latest, first, attempts, seenDownAt }) => (
                  <tr
                    key={latest.targetId}
                    data-testid={`shutdown-call-${latest.targetName}`}
                    data-state={latest.state}
                    data-seen-down={seenDownAt ? "true" : "false"}
                  >
                    <th scope="row">{latest.targetName}</th>
                    <td data-label="State">
                      {CALL_STATE[latest.state]}
                      {attempts > 1 && ` (attempt ${latest.attempt})`}
                      {seenDownAt ? (
                        <div className="small">
                          seen down{" "}
                          <time dateTime={seenDownAt} suppressHydrationWarning>
                            {formatClock(seenDownAt)}
                          </time>
                        </div>
                      ) : (
                        latest.state !== "would_send" && (
                          <div className="small muted">not seen down</div>
                        )
                      )}
                      {latest.detail && <div className="muted small">{latest.detail}</div>}
                    </td>
                    <td data-label="Request" className={styles.request}>
                      {latest.request}
                    </td>
                    <td data-label="When" className={styles.time}>
                      <time dateTime={first.startedAt} suppressHydrationWarning>
                        {formatClock(first.startedAt)}
                      </time>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <h3>Events</h3>
        <RunEvents events={run.events} />
        <h3>Log</h3>
        <LogViewer key={run.id} run={run} outcome={view.verdict} />
      </details>
    </>
  );
}

function AbortShutdown({ run }: { run: RunDetail }) {
  return (
    <AbortPowerRun
      run={run}
      queryKey={powerKeys.shutdownRun}
      label="Abort shutdown"
      title="Abort the power shutdown"
      testId="shutdown-abort"
    >
      <p>
        Stop this shutdown run at <strong>{run.currentStep}</strong>? Targets already sent their
        shutdown keep shutting down; the targets not yet called are <strong>not</strong> shut down
        by this run, even if the battery runs out.
      </p>
    </AbortPowerRun>
  );
}

/** An operator's Abort of a running power run, confirmed in a dialog that says what stops. */
export function AbortPowerRun({
  run,
  queryKey,
  label,
  title,
  testId,
  children,
}: {
  run: RunDetail;
  queryKey: QueryKey;
  label: string;
  title: string;
  testId: string;
  children: ReactNode;
}) {
  const canAct = useCan("operator");
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const queryClient = useQueryClient();
  // Server-rendered, the button has no handler until the page hydrates: disabled until then.
  const hydrated = useHydrated();
  if (!canAct || run.status !== "running") return null;
  const requested = isAbortRequested(run);
  const abort = () =>
    startTransition(async () => {
      setError(null);
      const result = await abortRunAction({ runId: run.id });
      if (result.ok) setConfirming(false);
      else setError(result.message);
      await queryClient.invalidateQueries({ queryKey });
    });
  return (
    <div className="run-controls">
      <button
        type="button"
        className="button button-danger"
        disabled={requested || pending || !hydrated}
        onClick={() => {
          setError(null);
          setConfirming(true);
        }}
        data-testid={`${testId}-button`}
      >
        {requested ? "Abort requested…" : label}
      </button>
      <ConfirmDialog
        open={confirming}
        title={title}
        confirmLabel={label}
        pending={pending}
        error={error}
        onConfirm={abort}
        onCancel={() => setConfirming(false)}
        testId={`${testId}-dialog`}
      >
        {children}
      </ConfirmDialog>
    </div>
  );
}
