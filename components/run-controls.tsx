"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { abortRunAction } from "@/lib/actions/abort-run";
import { retryRunAction } from "@/lib/actions/retry-run";
import type { RunDetail } from "@/lib/runs/get-run";
import { useCan } from "./actor-context";
import { ConfirmDialog } from "./confirm-dialog";
import { liveKeys } from "./live-keys";
import { isAbortRequested } from "./run-state";

/** Retry for a failed run, Abort (after confirmation) for a running one. */
export function RunControls({
  hostId,
  hostName,
  run,
}: {
  hostId: string;
  hostName: string;
  run: RunDetail;
}) {
  const queryClient = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [pending, startTransition] = useTransition();
  const canAct = useCan("operator");

  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: liveKeys.host(hostId) }),
      queryClient.invalidateQueries({ queryKey: liveKeys.hosts }),
      queryClient.invalidateQueries({ queryKey: liveKeys.run(run.id) }),
    ]);

  const retry = () =>
    startTransition(async () => {
      setError(null);
      const result = await retryRunAction({ runId: run.id });
      if (!result.ok) setError(result.message);
      await refresh();
    });

  const abort = () =>
    startTransition(async () => {
      setError(null);
      const result = await abortRunAction({ runId: run.id });
      if (result.ok) setConfirming(false);
      else setError(result.message);
      await refresh();
    });

  if (!canAct) return null;

  if (run.status === "failed") {
    return (
      <div className="run-controls">
        <button
          type="button"
          className="button button-primary"
          onClick={retry}
          disabled={pending}
          data-testid="retry-button"
        >
          {pending ? "Retrying…" : `Retry ${run.failedStep ?? run.currentStep}`}
        </button>
        {error && (
          <p className="notice notice-error" role="alert" data-testid="run-control-error">
            {error}
          </p>
        )}
      </div>
    );
  }

  if (run.status !== "running") return null;

  const abortRequested = isAbortRequested(run);
  return (
    <div className="run-controls">
      <button
        type="button"
        className="button button-danger"
        onClick={() => {
          setError(null);
          setConfirming(true);
        }}
        disabled={abortRequested || pending}
        data-testid="abort-button"
      >
        {abortRequested ? "Abort requested…" : "Abort run"}
      </button>
      {abortRequested && (
        <p className="muted" role="status" data-testid="abort-requested">
          Waiting for {run.currentStep} to clean up; the run then ends as aborted.
        </p>
      )}
      {error && !confirming && (
        <p className="notice notice-error" role="alert" data-testid="run-control-error">
          {error}
        </p>
      )}
      <ConfirmDialog
        open={confirming}
        title="Abort onboarding"
        confirmLabel="Abort run"
        pending={pending}
        error={confirming ? error : null}
        onConfirm={abort}
        onCancel={() => setConfirming(false)}
        testId="abort-dialog"
      >
        <p>
          Abort the onboarding of <strong>{hostName}</strong>? The run stops at the step it is in
          when the abort is taken — <strong>{run.currentStep}</strong> now, or the next one if it
          finishes first — which gets to clean up; the run then ends as aborted, and the host page
          names the step it stopped in. The host itself is not changed further.
        </p>
      </ConfirmDialog>
    </div>
  );
}
