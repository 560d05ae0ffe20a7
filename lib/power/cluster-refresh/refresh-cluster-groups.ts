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
import { recordPowerEvents, type PowerEventInput } from "@/lib/power/records/power-events";
import { normalizeFingerprint } from "@/lib/proxmox/pinned-https";
import { activeHosts } from "@/lib/hosts/active-hosts";
import {
  hostApi,
  type CephAnswer,
  type ClusterAnswer,
  type HostApi,
  type JoinAnswer,
} from "../clusters/discovery-api";
import {
  judgeMembership,
  type ClusterMembership,
  type EvidencePart,
  type MemberAnswer,
  type MembershipJudgement,
} from "../clusters/membership-evidence";

type HostRecord = typeof hosts.$inferSelect;
type ClusterRow = typeof powerClusters.$inferSelect;

/** Hosts asked at once; each is a few requests under a deadline. */
const PARALLEL_HOSTS = 4;

/** The hosts are asked again once one's last answer (or failure) is older than this. */
export const CLUSTER_REFRESH_INTERVAL_MS = 5 * 60_000;

export type RefreshOptions = {
  /** Ask every host now (the Refresh button), not only when one is due. */
  all?: boolean;
  now?: () => Date;
  timeoutMs?: number;
  /** How a host's API is reached; tests may wrap it. */
  connect?: (host: HostRecord) => Promise<HostApi>;
};

type Asked =
  | {
      host: HostRecord;
      api: HostApi;
      answer: ClusterAnswer;
      /** Members only: the cluster's configuration as this host reads it. */
      join: JoinAnswer | { error: string } | null;
    }
  | { host: HostRecord; error: string };
type Answered = Extract<Asked, { answer: ClusterAnswer }>;

const reason = (error: unknown) =>
  error instanceof Error ? error.message : safeErrorSummary(error);

/** Active Proxmox VE hosts with an API token: the ones that can tell their membership. */
async function askableHosts(db: Database): Promise<HostRecord[]> {
  return (await activeHosts(db))
    .filter((h) => h.nodeName && h.apiTokenId && h.apiTokenCredentialId)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Whether some host was not asked within the interval (or never). */
async function anyDue(db: Database, askable: HostRecord[], now: Date): Promise<boolean> {
  if (askable.length === 0) return false;
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
  return fresh.length < askable.length;
}

async function askAll(
  hostsToAsk: HostRecord[],
  connect: (h: HostRecord) => Promise<HostApi>,
): Promise<Asked[]> {
  const queue = [...hostsToAsk];
  // Kept in the hosts' order, not the order the answers came in: the judgement, and every list
  // of hosts it writes to cards and events, reads the same however the requests raced.
  const asked = new Map<string, Asked>();
  const worker = async () => {
    for (let host = queue.shift(); host; host = queue.shift()) {
      try {
        const api = await connect(host);
        const answer = await api.clusterStatus();
        // The configuration is evidence of which cluster it is, not of membership itself: a
        // failure to read it leaves the answer standing (said where it matters).
        const join =
          answer.kind === "cluster"
            ? await api.joinInfo().catch((error: unknown) => ({ error: reason(error) }))
            : null;
        asked.set(host.id, { host, api, answer, join });
      } catch (error) {
        asked.set(host.id, { host, error: reason(error) });
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_HOSTS }, worker));
  return hostsToAsk.map((host) => asked.get(host.id)!);
}

/** Ceph as the first member that gives a definite answer sees it. */
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

/** Running guests per node from the first member that answers; null when none does. */
async function askGuests(members: HostApi[]): Promise<Map<string, number> | null> {
  for (const api of members) {
    try {
      return await api.runningGuests();
    } catch {
      // the next member
    }
  }
  return null;
}

const memberAnswer = (a: Answered): MemberAnswer => {
  if (a.answer.kind !== "cluster") throw new Error("only members are judged");
  return {
    hostId: a.host.id,
    hostName: a.host.name,
    node: a.answer.local ?? a.host.nodeName!,
    pin: a.host.apiCertSha256!,
    status: a.answer,
    join: a.join ?? { error: "not asked" },
  };
};

/**
 * Which row each group of hosts is: the row of the same name most of its hosts were counted in
 * (its policy and consolidate settings stay with it). On a tie — a row that held two clusters of
 * one name, as before names stopped being identities — the group the row's recorded
 * certificates name, else the one with the host onboarded first (the row was made for its
 * cluster), else the older row. A group none is left for is a new cluster. Returns the row id
 * (or null: new) per part.
 */
function assignRows(
  parts: readonly EvidencePart[],
  previousOf: ReadonlyMap<string, string | null>,
  rows: ReadonlyMap<string, ClusterRow>,
  onboardedAt: ReadonlyMap<string, Date>,
): (string | null)[] {
  const pairs: { part: number; row: ClusterRow; count: number; named: number; first: number }[] =
    [];
  parts.forEach((part, i) => {
    const counts = new Map<string, number>();
    for (const m of part.members) {
      const row = previousOf.get(m.hostId);
      if (row && rows.get(row)?.name === part.name) counts.set(row, (counts.get(row) ?? 0) + 1);
    }
    const first = Math.min(...part.members.map((m) => onboardedAt.get(m.hostId)!.getTime()));
    for (const [id, count] of counts) {
      const row = rows.get(id)!;
      const named = part.members.filter((m) => {
        const recorded = row.nodes.find((n) => n.name === m.node)?.fingerprint;
        return !!recorded && normalizeFingerprint(recorded) === normalizeFingerprint(m.pin);
      }).length;
      pairs.push({ part: i, row, count, named, first });
    }
  });
  pairs.sort(
    (a, b) =>
      b.count - a.count ||
      b.named - a.named ||
      a.first - b.first ||
      a.row.createdAt.getTime() - b.row.createdAt.getTime(),
  );
  const assigned: (string | null)[] = parts.map(() => null);
  const taken = new Set<string>();
  for (const { part, row } of pairs) {
    if (assigned[part] !== null || taken.has(row.id)) continue;
    assigned[part] = row.id;
    taken.add(row.id);
  }
  return assigned;
}

const hostList = (part: EvidencePart) => part.members.map((m) => m.hostName).join(", ");

function membershipOf(
  judged: MembershipJudgement,
  index: number,
  ids: readonly string[],
  at: Date,
): ClusterMembership {
  const part = judged.parts[index]!;
  const sameName = judged.relations
    .filter((r) => r.parts.includes(index))
    .map((r) => {
      const other = r.parts[0] === index ? r.parts[1] : r.parts[0];
      return {
        clusterId: ids[other]!,
        hosts: judged.parts[other]!.members.map((m) => m.hostName),
        kind: r.kind,
        why: r.why,
      };
    });
  return {
    verdict: sameName.some((s) => s.kind === "ambiguous")
      ? "ambiguous"
      : part.members.length > 1
        ? "confirmed"
        : "single",
    findings:
      part.members.length === 1 && part.findings.length === 0
        ? [`${hostList(part)}: the only onboarded host that answered for ${part.name}`]
        : part.findings,
    sameName,
    judgedAt: at.toISOString(),
  };
}

/**
 * Asks every host (once one is due, or all on Refresh) what cluster it belongs to and how that
 * cluster's configuration names its nodes, and records it: which hosts are one cluster — by the
 * certificates, never by the name alone (lib/power/clusters/membership-evidence.ts) — each cluster's quorum, nodes
 * and Ceph monitors, and what told it apart from others of the same name or could not. A host
 * that cannot be asked keeps its last known membership with the reason; a cluster none of whose
 * members answered keeps what it was with "could not ask". Clusters no known host belongs to
 * any more are forgotten. Returns the number of hosts asked.
 */
export async function refreshClusterGroups(
  db: Database,
  options: RefreshOptions = {},
): Promise<number> {
  const now = options.now ?? (() => new Date());
  const connect = options.connect ?? ((host: HostRecord) => hostApi(db, host, options.timeoutMs));
  const askable = await askableHosts(db);
  // Which hosts are one cluster is judged among all answers at once: one due, all asked.
  const toAsk = options.all || (await anyDue(db, askable, now())) ? askable : [];
  const asked = await askAll(toAsk, connect);

  const members = asked.filter((a): a is Answered => "answer" in a && a.answer.kind === "cluster");
  const judged = judgeMembership(members.map(memberAnswer));
  const apiOf = new Map(members.map((m) => [m.host.id, m.api]));
  const ceph = await Promise.all(
    judged.parts.map((part) => askCeph(part.members.map((m) => ({ api: apiOf.get(m.hostId)! })))),
  );
  const guests = await Promise.all(
    judged.parts.map((part) => askGuests(part.members.map((m) => apiOf.get(m.hostId)!))),
  );

  const at = now();
  await db.transaction(async (tx) => {
    // One refresh writes at a time (the cron job and a Refresh may overlap).
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('clupilot:power-cluster-refresh'))`);
    const previous = await tx
      .select({
        hostId: powerClusterMemberships.hostId,
        clusterId: powerClusterMemberships.clusterId,
      })
      .from(powerClusterMemberships);
    const previousOf = new Map(previous.map((p) => [p.hostId, p.clusterId]));
    const names = [...new Set(judged.parts.map((p) => p.name))];
    const rows = new Map(
      (names.length === 0
        ? []
        : await tx.select().from(powerClusters).where(inArray(powerClusters.name, names))
      ).map((row) => [row.id, row]),
    );
    const assigned = assignRows(
      judged.parts,
      previousOf,
      rows,
      new Map(members.map((m) => [m.host.id, m.host.createdAt])),
    );

    const ids: string[] = [];
    for (const [i, part] of judged.parts.entries()) {
      // A member cut off from the others sees no quorum; a quorate view is the cluster's.
      const best = part.members.find((m) => m.status.quorate) ?? part.members[0]!;
      const row = assigned[i] ? rows.get(assigned[i])! : null;
      const cephAnswer = ceph[i]!;
      const monitors =
        cephAnswer.kind === "ceph"
          ? new Set(cephAnswer.monitors)
          : cephAnswer.kind === "none"
            ? new Set<string>()
            : new Set((row?.nodes ?? []).filter((n) => n.cephMon).map((n) => n.name));
      const fingerprints = new Map(
        "error" in best.join ? [] : best.join.nodes.map((n) => [n.name, n.fingerprint]),
      );
      const running = guests[i]!;
      const nodes: ClusterNodeRecord[] = best.status.nodes.map((n) => ({
        ...n,
        cephMon: monitors.has(n.name),
        fingerprint: fingerprints.get(n.name) ?? null,
        // Not asked (every member failed): what was known stays.
        runningGuests: running
          ? (running.get(n.name) ?? 0)
          : (row?.nodes.find((r) => r.name === n.name)?.runningGuests ?? null),
      }));
      const values = {
        name: part.name,
        quorate: best.status.quorate,
        nodes,
        hyperConverged:
          cephAnswer.kind === "unknown"
            ? (row?.hyperConverged ?? false)
            : cephAnswer.kind === "ceph" && cephAnswer.monitors.length > 0,
        refreshedAt: at,
        refreshError:
          cephAnswer.kind === "unknown" ? `could not ask Ceph: ${cephAnswer.error}` : null,
        updatedAt: at,
      };
      if (row) {
        await tx.update(powerClusters).set(values).where(eq(powerClusters.id, row.id));
        ids.push(row.id);
      } else {
        const [created] = await tx
          .insert(powerClusters)
          .values(values)
          .returning({ id: powerClusters.id });
        ids.push(created!.id);
      }
    }
    const clusterOf = new Map(
      judged.parts.flatMap((part, i) => part.members.map((m) => [m.hostId, ids[i]!] as const)),
    );
    const events: PowerEventInput[] = [];
    for (const [i, part] of judged.parts.entries()) {
      const membership = membershipOf(judged, i, ids, at);
      await tx.update(powerClusters).set({ membership }).where(eq(powerClusters.id, ids[i]!));
      events.push(...membershipEvents(part, membership, ids[i]!, { rows, previousOf, clusterOf }));
    }
    await recordPowerEvents(tx, events);

    const failedByCluster = new Map<string, string[]>();
    for (const a of asked) {
      if ("answer" in a) {
        const values = {
          clusterId: clusterOf.get(a.host.id) ?? null,
          checkedAt: at,
          askError: null,
          askedAt: at,
        };
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
    const answeredIds = new Set(ids);
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

/**
 * What changed in which hosts are one cluster, said once when it changes: a group that split off
 * the cluster its hosts were counted in (it goes down as one unit until an admin sets its
 * policy), clusters found to be one (the other's policy no longer applies), an ambiguity that
 * appears or is resolved.
 */
function membershipEvents(
  part: EvidencePart,
  membership: ClusterMembership,
  id: string,
  known: {
    rows: ReadonlyMap<string, ClusterRow>;
    /** Each host's cluster before this refresh, and now. */
    previousOf: ReadonlyMap<string, string | null>;
    clusterOf: ReadonlyMap<string, string>;
  },
): PowerEventInput[] {
  const { rows, previousOf, clusterOf } = known;
  const events: PowerEventInput[] = [];
  const own = rows.get(id);
  const formerRows = [
    ...new Set(
      part.members.flatMap((m) => {
        const row = previousOf.get(m.hostId);
        return row && row !== id && rows.get(row)?.name === part.name ? [row] : [];
      }),
    ),
  ];
  const data = { clusterId: id, hosts: part.members.map((m) => m.hostName) };
  if (!own && formerRows.length > 0) {
    const apart = membership.sameName.filter((s) => formerRows.includes(s.clusterId));
    events.push({
      severity: "warning",
      kind: "cluster.membership",
      message: `${hostList(part)} ${part.members.length === 1 ? "is" : "are"} a cluster ${part.name} of ${part.members.length === 1 ? "its" : "their"} own, not the one ${part.members.length === 1 ? "it was" : "they were"} counted with${apart[0] ? `: ${apart[0].why}` : ""}. It goes down as one unit until an admin sets its policy on /power/clusters.`,
      data,
    });
  }
  // The row kept its policy while hosts counted in it went to another group: say whose it is now.
  const leftToOthers = own
    ? [...previousOf].filter(
        ([hostId, row]) => row === id && !part.members.some((m) => m.hostId === hostId),
      )
    : [];
  if (
    own &&
    leftToOthers.some(([hostId]) => (clusterOf.get(hostId) ?? id) !== id) &&
    (own.policy !== "cluster" || own.consolidate !== null)
  ) {
    events.push({
      severity: "warning",
      kind: "cluster.membership",
      message: `${part.name} (${hostList(part)}) keeps the policy ${own.policy}${own.consolidate ? " and the consolidate settings" : ""} it had while counted together with hosts that are another cluster of the same name: check on /power/clusters that they are meant for this one`,
      data,
    });
  }
  for (const former of formerRows) {
    const row = rows.get(former)!;
    if (
      !own ||
      (row.policy === own.policy &&
        JSON.stringify(row.consolidate) === JSON.stringify(own.consolidate))
    )
      continue;
    events.push({
      severity: "warning",
      kind: "cluster.membership",
      message: `${hostList(part)}: one cluster ${part.name} after all (${membership.findings[0] ?? "by their certificates"}); it keeps the policy ${own.policy}, the ${row.policy} set for some of them no longer applies`,
      data,
    });
  }
  const wasAmbiguous = own?.membership?.verdict === "ambiguous";
  if (membership.verdict === "ambiguous" && !wasAmbiguous) {
    const with_ = membership.sameName.filter((s) => s.kind === "ambiguous");
    events.push({
      severity: "warning",
      kind: "cluster.membership",
      message: `${part.name} (${hostList(part)}): the console cannot tell whether it is the same cluster as ${with_.map((s) => s.hosts.join(", ")).join("; ")}: ${with_[0]!.why}. Each goes down as one unit, every one's HA disarmed and guests stopped before any node goes down.`,
      data,
    });
  } else if (wasAmbiguous && membership.verdict !== "ambiguous") {
    events.push({
      severity: "info",
      kind: "cluster.membership",
      message: `${part.name} (${hostList(part)}): no longer ambiguous — ${membership.findings[0] ?? membership.verdict}`,
      data,
    });
  }
  return events;
}
