import { eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { powerClusters } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import { recordPowerEvents } from "../events";
import type { ClusterPolicy } from "./load-cluster-groups";
import { CONSOLIDATE_ON_CEPH, ZSetClusterPolicy } from "./schemas";

const POLICY_TEXT: Record<ClusterPolicy, string> = {
  cluster: "cluster as one unit",
  "per-host": "per host",
  consolidate: "consolidate",
};

/** How a cluster goes down on a power event. Admins; audited; consolidate never on Ceph. */
export async function setClusterPolicy(
  db: Database,
  input: z.input<typeof ZSetClusterPolicy>,
  actor: AuditActor,
): Promise<{ id: string; name: string; policy: ClusterPolicy }> {
  const data = ZSetClusterPolicy.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.cluster_policy",
      target: data.id,
      detail: { policy: data.policy },
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
        if (cluster.policy !== data.policy) {
          await tx
            .update(powerClusters)
            .set({ policy: data.policy, updatedAt: new Date() })
            .where(eq(powerClusters.id, cluster.id));
          await recordPowerEvents(tx, [
            {
              severity: "info",
              kind: "config.changed",
              message: `cluster ${cluster.name} goes down ${POLICY_TEXT[data.policy]} (was ${POLICY_TEXT[cluster.policy]}), set by ${actor.name}`,
              data: { clusterId: cluster.id, policy: data.policy },
            },
          ]);
          // A configuration change: every open power page reads its queries again.
          await notifyLive(tx, { type: "power", upsId: null, eventId: null });
        }
        return { id: cluster.id, name: cluster.name, policy: data.policy };
      }),
  );
}
