"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { reonboardHostAction } from "@/lib/actions/reonboard-host";
import { useCan } from "./actor-context";
import { ConfirmDialog } from "./confirm-dialog";
import { liveKeys } from "./live-keys";

/**
 * "Run onboarding again" for a host whose latest run has ended (active or failed): after a
 * reinstall, after the catalog gained a template, or to re-check a host. Confirmed first,
 * because the steps do act on the host where something no longer holds.
 */
export function ReonboardControl({ hostId, hostName }: { hostId: string; hostName: string }) {
  const queryClient = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [pending, startTransition] = useTransition();
  const canAct = useCan("operator");

  const start = () =>
    startTransition(async () => {
      setError(null);
      const result = await reonboardHostAction({ hostId });
      if (result.ok) setConfirming(false);
      else setError(result.message);
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: liveKeys.host(hostId) }),
        queryClient.invalidateQueries({ queryKey: liveKeys.hosts }),
      ]);
    });

  if (!canAct) return null;

  return (
    <div className="run-controls">
      <button
        type="button"
        className="button"
        onClick={() => {
          setError(null);
          setConfirming(true);
        }}
        disabled={pending}
        data-testid="reonboard-button"
      >
        Run onboarding again
      </button>
      {error && !confirming && (
        <p className="notice notice-error" role="alert" data-testid="reonboard-error">
          {error}
        </p>
      )}
      <ConfirmDialog
        open={confirming}
        title="Run onboarding again"
        confirmLabel="Run onboarding again"
        pending={pending}
        error={confirming ? error : null}
        onConfirm={start}
        onCancel={() => setConfirming(false)}
        testId="reonboard-dialog"
      >
        <p>
          Runs every onboarding step against <strong>{hostName}</strong> again. Steps whose goal
          already holds change nothing; a step that finds something missing or changed puts it right
          (for example, a lost API token is rotated and a missing template is built), or fails
          saying why.
        </p>
        <p>
          The host shows as onboarding until the new run ends, and this page follows the new run;
          the previous run stays recorded.
        </p>
      </ConfirmDialog>
    </div>
  );
}
