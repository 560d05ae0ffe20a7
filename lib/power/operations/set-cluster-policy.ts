import { eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { powerClusters } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import { describeConsolidate } from "../consolidate/describe";
import { recordPowerEvents } from "../records/power-events";
import { consolidateSettingsOf, type ClusterPolicy } from "../clusters/load-cluster-groups";
import { requestClusterRefresh } from "../cluster-refresh/refresh-task";
import {
  CONSOLIDATE_ON_CEPH,
  ZConsolidateSettings,
  ZSetClusterPolicy,
  type ConsolidateSettings,
} from "../clusters/schemas";

const POLICY_TEXT: Record<ClusterPolicy, string> = {
  cluster: "cluster: only the nodes that lost power, as one unit when all did",
  "whole-cluster": "whole cluster as one unit, always",
  "per-host": "per host",
  consolidate: "consolidate",
};

/**
 * How a cluster goes down on a power event, and — for consolidate — its mode, the node that
 * stays and the first threshold (a key left out keeps its value). Admins; audited; consolidate
 * never on Ceph; the node that stays must be a member. A change to a consolidating cluster asks
 * the hosts again, which checks again whether consolidating can work.
 */
export async function setClusterPolicy(
  db: Database,
  input: z.input<typeof ZSetClusterPolicy>,
  actor: AuditActor,
): Promise<{ id: string; name: string; policy: ClusterPolicy; consolidate: ConsolidateSettings }> {
  const data = ZSetClusterPolicy.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.cluster_policy",
      target: data.id,
      detail: {
        policy: data.policy,
        ...(data.consolidate ? { consolidate: data.consolidate } : {}),
      },
    },
    () =>
      db.transaction(async (tx) => {
        const [cluster] = await tx
          .select()
          .from(powerClusters)
          .where(eq(powerClusters.id, data.id))
          .for("update");
        if (!cluster) {
          throw new AppError(
            "not_found",
            "This cluster is no longer known (no onboarded host belongs to it); reload the page.",
          );
        }
        if (data.policy === "consolidate" && cluster.hyperConverged) {
          throw new AppError("invalid_input", `${cluster.name}: consolidate is refused.`, {
            policy: [CONSOLIDATE_ON_CEPH],
          });
        }
        const current = consolidateSettingsOf(cluster.consolidate);
        const change = data.consolidate ?? {};
        const merged = ZConsolidateSettings.safeParse({
          ...current,
          ...change,
          firstThreshold: { ...current.firstThreshold, ...change.firstThreshold },
        });
        if (!merged.success) {
          throw new AppError(
            "invalid_input",
            `${cluster.name}: the consolidate settings are refused.`,
            {
              [`consolidate.${merged.error.issues[0]?.path.join(".") ?? "firstThreshold"}`]: [
                merged.error.issues[0]?.message ?? "invalid",
              ],
            },
          );
        }
        const consolidate = merged.data;
        if (change.remainingNode && !cluster.nodes.some((n) => n.name === change.remainingNode)) {
          throw new AppError("invalid_input", `${cluster.name}: the node that stays is refused.`, {
            "consolidate.remainingNode": [
              `${change.remainingNode} is not a member of ${cluster.name} (members: ${cluster.nodes.map((n) => n.name).join(", ")}).`,
            ],
          });
        }
        const settingsChanged = JSON.stringify(consolidate) !== JSON.stringify(current);
        if (cluster.policy !== data.policy || settingsChanged) {
          await tx
            .update(powerClusters)
            .set({ policy: data.policy, consolidate, updatedAt: new Date() })
            .where(eq(powerClusters.id, cluster.id));
          const parts = [
            cluster.policy !== data.policy
              ? `goes down ${POLICY_TEXT[data.policy]} (was ${POLICY_TEXT[cluster.policy]})`
              : null,
            settingsChanged ? `consolidates: ${describeConsolidate(consolidate)}` : null,
          ].filter(Boolean);
          await recordPowerEvents(tx, [
            {
              severity: "info",
              kind: "config.changed",
              message: `cluster ${cluster.name} ${parts.join("; ")}, set by ${actor.name}`,
              data: { clusterId: cluster.id, policy: data.policy, consolidate },
            },
          ]);
          // A configuration change: every open power page reads its queries again.
          await notifyLive(tx, { type: "power", upsId: null, eventId: null });
          // Whether consolidating can work is checked against the cluster as it is now.
          if (data.policy === "consolidate") await requestClusterRefresh(tx);
        }
        return { id: cluster.id, name: cluster.name, policy: data.policy, consolidate };
      }),
  );
}
