"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { restoreClusterAction } from "@/lib/actions/power/restore-cluster";
import type { RestoreReport } from "@/lib/power/restore-cluster";
import { useCan } from "../actor-context";
import { ConfirmDialog } from "../confirm-dialog";
import { powerKeys } from "./power-keys";

const OUTCOME_TEXT: Record<RestoreReport["items"][number]["outcome"], string> = {
  restored: "restored",
  "not-available": "not available",
  failed: "NOT restored",
};

/**
 * An admin brings a cluster back to normal after power returns: HA re-armed, the Ceph flags of
 * the shutdown cleared. The dialog says what will change; the answer says what did, item by item.
 */
export function RestoreClusterButton({
  clusterId,
  clusterName,
  hyperConverged,
}: {
  clusterId: string;
  clusterName: string;
  hyperConverged: boolean;
}) {
  const canAct = useCan("admin");
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [report, setReport] = useState<RestoreReport | null>(null);
  const [pending, startTransition] = useTransition();
  if (!canAct) return null;
  const restore = () =>
    startTransition(async () => {
      setError(null);
      const result = await restoreClusterAction({ clusterId });
      if (result.ok) {
        setReport(result.report);
        setOpen(false);
      } else setError(result.message);
      await queryClient.invalidateQueries({ queryKey: powerKeys.all });
    });
  return (
    <div>
      <button
        type="button"
        className="button"
        onClick={() => {
          setError(null);
          setOpen(true);
        }}
        data-testid={`restore-cluster-${clusterName}`}
      >
        Restore {clusterName}…
      </button>
      {report && (
        <ul className="small" data-testid={`restore-report-${clusterName}`}>
          {report.items.map((item) => (
            <li key={item.what} className={item.outcome === "failed" ? "notice-error" : undefined}>
              {item.what}: {OUTCOME_TEXT[item.outcome]} — {item.detail}
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={open}
        title={`Restore ${clusterName} after the outage`}
        confirmLabel="Restore"
        pending={pending}
        error={error}
        onConfirm={restore}
        onCancel={() => setOpen(false)}
        testId="restore-cluster-dialog"
      >
        <p>
          Re-arm HA on {clusterName}
          {hyperConverged && " and clear the Ceph flags noout, nobackfill, norecover, norebalance"}?
          Do this once every node is back: armed HA fences and recovers nodes that are still missing
          {hyperConverged && ", and without the flags Ceph starts rebalancing away from them"}.
        </p>
      </ConfirmDialog>
    </div>
  );
}
