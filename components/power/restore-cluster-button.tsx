"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { restoreClusterAction } from "@/lib/actions/power/restore-cluster";
import type { RestoreReport } from "@/lib/power/operations/restore-cluster";
import { useCan } from "../actor-context";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
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
  const [report, setReport] = useState<RestoreReport | null>(null);
  const restore = useConfirmedAction(() => restoreClusterAction({ clusterId }), {
    onSuccess: (result) => setReport(result.report),
    onSettled: () => queryClient.invalidateQueries({ queryKey: powerKeys.all }),
  });
  if (!canAct) return null;
  return (
    <div>
      <ConfirmedAction
        state={restore}
        label={`Restore ${clusterName}…`}
        testId={`restore-cluster-${clusterName}`}
        confirm={{
          title: `Restore ${clusterName} after the outage`,
          confirmLabel: "Restore",
          testId: "restore-cluster-dialog",
          body: (
            <p>
              Re-arm HA on {clusterName}
              {hyperConverged &&
                " and clear the Ceph flags noout, nobackfill, norecover, norebalance"}
              ? Do this once every node is back: armed HA fences and recovers nodes that are still
              missing
              {hyperConverged && ", and without the flags Ceph starts rebalancing away from them"}.
            </p>
          ),
        }}
      />
      {report && (
        <ul className="small" data-testid={`restore-report-${clusterName}`}>
          {report.items.map((item) => (
            <li key={item.what} className={item.outcome === "failed" ? "notice-error" : undefined}>
              {item.what}: {OUTCOME_TEXT[item.outcome]} — {item.detail}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
