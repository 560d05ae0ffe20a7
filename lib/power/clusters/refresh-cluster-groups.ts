import { and, eq, gt, inArray, notInArray, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import {
  hosts,
  powerClusterMemberships,
  powerClusters,
  type ClusterNodeRecord,
} from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import { refreshConsolidateChecks } from "@/lib/power/consolidate/refresh-checks";
import { activeHosts } from "@/lib/hosts/active-hosts";
import { hostApi, type CephAnswer, type ClusterAnswer, type HostApi } from "./cluster-api";

type HostRecord = typeof hosts.$inferSelect;

/** Hosts asked at once; each is one or two requests under a deadline. */
const PARALLEL_HOSTS = 4;

/** A host is asked again once its last answer (or failure) is older than this. */
export const CLUSTER_REFRESH_INTERVAL_MS = 5 * 60_000;

export type RefreshOptions = {
  /** Ask every host now (the Refresh button), not only those due. */
  all?: boolean;
  now?: () => Date;
  timeoutMs?: number;
  /** How a host's API is reached; tests may wrap it. */
  connect?: (host: HostRecord) => Promise<HostApi>;
};

type Asked =
  { host: HostRecord; api: HostApi; answer: ClusterAnswer } | { host: HostRecord; error: string };

const reason = (error: unknown) =>
  error instanceof Error ? error.message : safeErrorSummary(error);

/** Active Proxmox VE hosts with an API token: the ones that can tell their membership. */
async function askableHosts(db: Database): Promise<HostRecord[]> {
  return (await activeHosts(db)).filter(
    (h) => h.nodeName && h.apiTokenId && h.apiTokenCredentialId,
  );
}

async function dueHosts(db: Database, askable: HostRecord[], now: Date): Promise<HostRecord[]> {
  if (askable.length === 0) return [];
  const fresh = await db
    .select({ hostId: powerClusterMemberships.hostId })
    .from(powerClusterMemberships)
    .where(
      and(
        inArray(
          powerClusterMemberships.hostId,
          askable.map((h) => h.id),
        ),
        gt(powerClusterMemberships.askedAt, new Date(now.getTime() - CLUSTER_REFRESH_INTERVAL_MS)),
      ),
    );
  const freshIds = new Set(fresh.map((r) => r.hostId));
  return askable.filter((h) => !freshIds.has(h.id));
}

async function askAll(
  hostsToAsk: HostRecord[],
  connect: (h: HostRecord) => Promise<HostApi>,
): Promise<Asked[]> {
  const queue = [...hostsToAsk];
  const asked: Asked[] = [];
  const worker = async () => {
    for (let host = queue.shift(); host; host = queue.shift()) {
      try {
        const api = await connect(host);
        asked.push({ host, api, answer: await api.clusterStatus() });
      } catch (error) {
        asked.push({ host, error: reason(error) });
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_HOSTS }, worker));
  return asked;
}

/** Ceph as the first member that gives a definite answer sees it; null when none could be asked. */
async function askCeph(
  members: { api: HostApi }[],
): Promise<CephAnswer | { kind: "unknown"; error: string }> {
  const errors: string[] = [];
  for (const { api } of members) {
    try {
      return await api.ceph();
    } catch (error) {
      errors.push(reason(error));
    }
  }
  return { kind: "unknown", error: errors.join("; ") || "no member answered" };
}

/**
 * Asks the due hosts (or all) what cluster they belong to, and records it: each host's
 * membership, each cluster's name, quorum, nodes and Ceph monitors. A host that cannot be asked
 * keeps its last known membership with the reason; a cluster none of whose asked members
 * answered keeps what it was with "could not ask". Clusters no known host belongs to any more
 * are forgotten. Returns the number of hosts asked.
 */
export async function refreshClusterGroups(
  db: Database,
  options: RefreshOptions = {},
): Promise<number> {
  const now = options.now ?? (() => new Date());
  const connect = options.connect ?? ((host: HostRecord) => hostApi(db, host, options.timeoutMs));
  const askable = await askableHosts(db);
  const toAsk = options.all ? askable : await dueHosts(db, askable, now());
  const asked = await askAll(toAsk, connect);

  type Answered = Extract<Asked, { answer: ClusterAnswer }>;
  const byCluster = new Map<string, Answered[]>();
  for (const a of asked) {
    if ("answer" in a && a.answer.kind === "cluster") {
      byCluster.set(a.answer.name, [...(byCluster.get(a.answer.name) ?? []), a]);
    }
  }
  const ceph = new Map<string, Awaited<ReturnType<typeof askCeph>>>();
  for (const [name, members] of byCluster) ceph.set(name, await askCeph(members));

  const at = now();
  await db.transaction(async (tx) => {
    // One refresh writes at a time (the cron job and a Refresh may overlap).
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('clupilot:power-cluster-refresh'))`);
    const clusterIds = new Map<string, string>();
    for (const [name, members] of byCluster) {
      // A member cut off from the others sees no quorum; a quorate view is the cluster's.
      const best =
        members.find((m) => m.answer.kind === "cluster" && m.answer.quorate) ?? members[0]!;
      if (best.answer.kind !== "cluster") continue;
      const [previous] = await tx.select().from(powerClusters).where(eq(powerClusters.name, name));
      const cephAnswer = ceph.get(name)!;
      const monitors =
        cephAnswer.kind === "ceph"
          ? new Set(cephAnswer.monitors)
          : cephAnswer.kind === "none"
            ? new Set<string>()
            : new Set((previous?.nodes ?? []).filter((n) => n.cephMon).map((n) => n.name));
      const nodes: ClusterNodeRecord[] = best.answer.nodes.map((n) => ({
        ...n,
        cephMon: monitors.has(n.name),
      }));
      const values = {
        quorate: best.answer.quorate,
        nodes,
        hyperConverged:
          cephAnswer.kind === "unknown"
            ? (previous?.hyperConverged ?? false)
            : cephAnswer.kind === "ceph" && cephAnswer.monitors.length > 0,
        refreshedAt: at,
        refreshError:
          cephAnswer.kind === "unknown" ? `could not ask Ceph: ${cephAnswer.error}` : null,
        updatedAt: at,
      };
      const [row] = await tx
        .insert(powerClusters)
        .values({ name, ...values })
        .onConflictDoUpdate({ target: powerClusters.name, set: values })
        .returning({ id: powerClusters.id });
      clusterIds.set(name, row!.id);
    }

    const failedByCluster = new Map<string, string[]>();
    for (const a of asked) {
      if ("answer" in a) {
        const clusterId = a.answer.kind === "cluster" ? clusterIds.get(a.answer.name)! : null;
        const values = { clusterId, checkedAt: at, askError: null, askedAt: at };
        await tx
          .insert(powerClusterMemberships)
          .values({ hostId: a.host.id, ...values })
          .onConflictDoUpdate({ target: powerClusterMemberships.hostId, set: values });
      } else {
        const [kept] = await tx
          .insert(powerClusterMemberships)
          .values({ hostId: a.host.id, askError: a.error, askedAt: at })
          .onConflictDoUpdate({
            target: powerClusterMemberships.hostId,
            set: { askError: a.error, askedAt: at },
          })
          .returning({ clusterId: powerClusterMemberships.clusterId });
        if (kept?.clusterId) {
          failedByCluster.set(kept.clusterId, [
            ...(failedByCluster.get(kept.clusterId) ?? []),
            `${a.host.name}: ${a.error}`,
          ]);
        }
      }
    }
    // A cluster whose asked members all failed keeps its last known state, saying why.
    const answeredIds = new Set(clusterIds.values());
    for (const [clusterId, errors] of failedByCluster) {
      if (answeredIds.has(clusterId)) continue;
      await tx
        .update(powerClusters)
        .set({ refreshError: `could not ask ${errors.join("; ")}`, updatedAt: at })
        .where(eq(powerClusters.id, clusterId));
    }

    // Hosts no longer active (retired, failed, removed) stop counting as members.
    const askableIds = askable.map((h) => h.id);
    await tx
      .delete(powerClusterMemberships)
      .where(
        askableIds.length === 0
          ? undefined
          : notInArray(powerClusterMemberships.hostId, askableIds),
      );
    await tx.execute(sql`
      delete from power_clusters c
      where not exists (select 1 from power_cluster_memberships m where m.cluster_id = c.id)`);
    await notifyLive(tx, { type: "power", upsId: null, eventId: null });
  });
  // What the clusters look like now decides whether consolidating them can work.
  if (asked.length > 0) await refreshConsolidateChecks(db, { timeoutMs: options.timeoutMs });
  return asked.length;
}
