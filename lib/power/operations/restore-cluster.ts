import { inArray } from "drizzle-orm";
import { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { clusterApiFor, type ClusterApi } from "../clusters/sequence-api";
import { clearCephFlags, rearmHa, type RestoreItem } from "../clusters/restore";
import { loadClusterGroups, type ClusterGroup } from "../clusters/load-cluster-groups";
import type { PveEndpoint } from "../targets/load-targets";
import { probeTarget } from "../targets/shutdown-call";

/**
 * Restore after power is back (manual, admins, audited): re-arm HA (`arm-ha`) and clear the
 * Ceph flags the shutdown set, each read back. The report names what was restored and what
 * could not be — a call that failed or a state that did not read back is never "restored".
 */

export const ZRestoreCluster = z.strictObject(
  { clusterId: z.uuid({ error: "Not a cluster id; reload the page." }) },
  { error: "Send { clusterId } of the cluster to restore." },
);

export type RestoreReport = {
  cluster: string;
  /** The node whose API was asked. */
  node: string;
  items: RestoreItem[];
  /** Everything that exists was restored and read back. */
  restored: boolean;
};

const CALL_TIMEOUT_MS = 10_000;

export async function restoreCluster(
  db: Database,
  input: z.input<typeof ZRestoreCluster>,
  actor: AuditActor,
): Promise<RestoreReport> {
  const { clusterId } = ZRestoreCluster.parse(input);
  return audited(
    db,
    {
      actor,
      action: "power.cluster_restore",
      target: `cluster:${clusterId}`,
      detail: (report) => ({
        cluster: report.cluster,
        node: report.node,
        items: report.items.map((i) => `${i.what}: ${i.outcome}: ${i.detail}`),
      }),
    },
    async () => {
      const group = (await loadClusterGroups(db)).find((g) => g.id === clusterId);
      if (!group) {
        throw new AppError(
          "not_found",
          "This cluster is no longer known to the console; refresh the cluster list.",
        );
      }
      const api = await answeringApi(db, group);
      const items: RestoreItem[] = [await rearmHa(api)];
      if (group.hyperConverged) items.push(await clearCephFlags(api));
      return {
        cluster: group.name,
        node: api.node,
        items,
        restored: items.every((i) => i.outcome !== "failed"),
      };
    },
  );
}

/** The first node of the cluster whose API answers, with the console's token for it. */
async function answeringApi(db: Database, group: ClusterGroup): Promise<ClusterApi> {
  const ids = group.nodes.flatMap((n) => (n.hostId ? [n.hostId] : []));
  const rows = ids.length === 0 ? [] : await db.select().from(hosts).where(inArray(hosts.id, ids));
  const endpoints = rows.flatMap((h): PveEndpoint[] =>
    h.nodeName && h.apiCertSha256 && h.apiTokenId && h.apiTokenCredentialId
      ? [
          {
            kind: "pve-node",
            hostId: h.id,
            address: h.address,
            apiPort: h.apiPort,
            nodeName: h.nodeName,
            apiCertSha256: h.apiCertSha256,
            apiTokenId: h.apiTokenId,
            apiTokenCredentialId: h.apiTokenCredentialId,
          },
        ]
      : [],
  );
  for (const endpoint of endpoints) {
    if ((await probeTarget(endpoint, 3000)).answers) {
      return clusterApiFor(db, endpoint, { timeoutMs: CALL_TIMEOUT_MS });
    }
  }
  throw new AppError(
    "unavailable",
    endpoints.length === 0
      ? `No node of ${group.name} is an onboarded host with an API token: the console cannot ask the cluster. Onboard one of its nodes first.`
      : `No node of ${group.name} answers its API yet (${endpoints.map((e) => e.nodeName).join(", ")}): nothing was changed. Try again once the nodes have booted.`,
  );
}

export type { RestoreItem };
