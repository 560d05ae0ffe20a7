import { eq, sql } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database, Transaction } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { refreshClusterGroups } from "./refresh-cluster-groups";

export const CLUSTER_REFRESH_TASK = "power-cluster-refresh";

/**
 * Every refresh job runs in this graphile-worker queue, one at a time in the order queued: two
 * refreshes side by side (the cron's, a Refresh, the one a cluster member's onboarding queues
 * while another is asking) could commit out of order, the one that asked before a host became
 * active last — leaving the host out of its group until the next refresh.
 */
const CLUSTER_REFRESH_QUEUE = CLUSTER_REFRESH_TASK;

/**
 * Every minute, graphile-worker's crontab (one job per slot however many workers run): each
 * slot asks the hosts that were never asked — a host that just became active shows up within a
 * minute — and those last asked five minutes ago. A minute with nothing due costs one query.
 */
export const CLUSTER_REFRESH_CRONTAB = `* * * * * ${CLUSTER_REFRESH_TASK} ?max=1&queue=${CLUSTER_REFRESH_QUEUE}`;

/** `{ all: true }` from the Refresh button; the cron job carries only `_cron`. */
const ZClusterRefreshPayload = z.object({ all: z.boolean().optional() }).loose();

export function createClusterRefreshTask(db: Database): Task {
  return async (payload, helpers) => {
    const { all } = ZClusterRefreshPayload.parse(payload ?? {});
    const asked = await refreshClusterGroups(db, { all: all === true });
    helpers.logger.debug(`${CLUSTER_REFRESH_TASK}: ${asked} hosts asked`);
  };
}

/**
 * Queues a refresh of every host (the Refresh button). One pending job at most: pressing again
 * while one waits changes nothing.
 */
export async function requestClusterRefresh(db: Pick<Database, "execute">): Promise<void> {
  await db.execute(sql`
    select graphile_worker.add_job(
      ${CLUSTER_REFRESH_TASK},
      json_build_object('all', true),
      max_attempts => 1,
      queue_name => ${CLUSTER_REFRESH_QUEUE},
      job_key => ${CLUSTER_REFRESH_TASK},
      job_key_mode => 'preserve_run_at'
    )`);
}

/** The Refresh button: audited, so who asked every host when is on record. */
export async function requestClusterRefreshBy(db: Database, actor: AuditActor): Promise<void> {
  await audited(db, { actor, action: "power.cluster_refresh", target: null }, () =>
    requestClusterRefresh(db),
  );
}

/**
 * A run that changed a host's cluster membership ended well (onboarding created or joined a
 * cluster, a decommission took a member out): power's cluster groups are asked again at once,
 * queued in the transaction that records the run's end — the minute's cron would get there too,
 * but an outage in between would shut the cluster down with the old group. A standalone host
 * changes no group (the cron picks it up as before).
 */
export async function requestClusterRefreshAfterRun(
  tx: Transaction,
  hostId: string | null,
): Promise<void> {
  if (hostId === null) return;
  const [host] = await tx
    .select({ clusterName: hosts.clusterName })
    .from(hosts)
    .where(eq(hosts.id, hostId));
  if (host?.clusterName) await requestClusterRefresh(tx);
}
