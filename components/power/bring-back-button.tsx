"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { bringBackNowAction } from "@/lib/actions/power/bring-back-now";
import { useCan } from "../actor-context";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
import { powerKeys } from "./power-keys";

/**
 * An admin's "Bring back now" after an outage: a power-back run without waiting for the policy
 * (mains stable, charge, runtime). The dialog says what it does; the answer names the run.
 */
export function BringBackButton() {
  const canAct = useCan("admin");
  const queryClient = useQueryClient();
  const [runId, setRunId] = useState<string | null>(null);
  const start = useConfirmedAction(() => bringBackNowAction({}), {
    onSuccess: (result) => setRunId(result.runId),
    onSettled: () => queryClient.invalidateQueries({ queryKey: powerKeys.all }),
  });
  if (!canAct) return null;
  return (
    <div>
      <ConfirmedAction
        state={start}
        label="Bring back now…"
        testId="bring-back-now"
        confirm={{
          title: "Bring the fleet back now",
          confirmLabel: "Bring back",
          testId: "bring-back-dialog",
          body: (
            <p>
              Power the hosts of the last outage on through their controllers (Ceph monitors first),
              wait for quorum, clear the Ceph flags and re-arm HA, and start the guests that ran
              before in their startup order — without waiting for the mains to hold and the battery
              to recharge. In dry-run every step is recorded and nothing is sent. Mains lost again
              stops it at once.
            </p>
          ),
        }}
      />
      {runId && (
        // The way back's own live panel is issue 30's item 9, not built yet: until then its
        // steps, phase line and log are the run's JSON.
        <p className="small" data-testid="bring-back-run">
          Power-back run {runId} started: its steps and log at{" "}
          <a href={`/api/runs/${runId}`}>/api/runs/{runId}</a>.
        </p>
      )}
    </div>
  );
}
