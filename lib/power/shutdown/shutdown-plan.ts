import { z } from "zod";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import {
  planClusterSequence,
  sequencedGroups,
  type ClusterSequencePlan,
  type ConsolidateInput,
} from "@/lib/power/clusters/sequence-plan";
import { POWER_MODES, type PowerMode, type ShutdownSettings } from "@/lib/power/config/settings";
import type { TargetRecord } from "@/lib/power/targets/load-targets";
import { describeShutdown, type ShutdownRequest } from "@/lib/power/targets/shutdown-call";

/**
 * The shutdown sequence. Standalone targets (and nodes of `per-host` clusters): configured
 * stages ascending, the host the console runs on in a group of its own at the very end. Within a
 * group the calls go out together, each under its own deadline; groups follow one another.
 * Nodes of a cluster shut down as one unit follow their cluster's sequence
 * (lib/power/clusters/sequence-plan.ts), one node per group; a standalone console host then
 * waits until every cluster is down. The same function orders the run's frozen plan and the
 * preview, so the preview is what a run would do.
 */

/** Why a step after PlanShutdown stops when the run carries no frozen plan. */
export const NO_PLAN = "This run has no plan; PlanShutdown must run first.";

/** What starts a `power-shutdown` run: which UPS fired, and the targets due with their outage. */
export const ZShutdownInput = z.object({
  trigger: z.object({
    upsId: z.uuid(),
    upsName: z.string(),
    trigger: z.string(),
    reason: z.string(),
    latchedAt: z.iso.datetime(),
  }),
  targets: z.array(z.object({ targetId: z.uuid(), dueSince: z.iso.datetime() })).min(1),
  /** The mode when the run started (PlanShutdown reads it again and freezes that). */
  mode: z.enum(POWER_MODES).optional(),
  /** Failed runs of the same outage whose targets this run takes over (the monitor's replacement). */
  replaces: z.array(z.uuid()).optional(),
  /**
   * Consolidating clusters whose first stage this run does: the stage latch that fired (its
   * time is the `dueSince` of the nodes that go down at it).
   */
  stages: z
    .array(z.object({ clusterId: z.uuid(), at: z.iso.datetime(), reason: z.string() }))
    .optional(),
});
export type ShutdownInput = z.infer<typeof ZShutdownInput>;

export type PlannedTarget = TargetRecord & {
  /** When it became due in this outage (names the outage for "one call per target"). */
  dueSince: string;
  /** 0-based position of its group in the sequence. */
  group: number;
  /** The exact request; null when the target cannot be reached (`problem`). */
  request: ShutdownRequest | null;
  deadlineSeconds: number;
  /** The cluster whose sequence shuts it down (ShutDownClusterNodes); null: a standalone call. */
  cluster: string | null;
  /** The console's standalone host while clusters are in the run: sent after every cluster. */
  afterClusters: boolean;
};

export type ShutdownPlan = {
  mode: PowerMode;
  plannedAt: string;
  targets: PlannedTarget[];
  /** Clusters shut down as one unit, each with its sequence; run before their nodes go down. */
  clusters: ClusterSequencePlan[];
  groups: number;
  callTimeoutSeconds: number;
  targetDownSeconds: number;
  budgetSeconds: number;
};

type Orderable = Pick<TargetRecord, "stage" | "runsConsole" | "name">;

/** Stages ascending, then by name; the console's own host last, whatever its stage. */
export function orderTargets<T extends Orderable>(targets: readonly T[]): T[] {
  return [...targets].sort(
    (a, b) =>
      Number(a.runsConsole) - Number(b.runsConsole) ||
      a.stage - b.stage ||
      a.name.localeCompare(b.name),
  );
}

/** The group index of each target, in the given (ordered) sequence. */
export function groupIndexes(ordered: readonly Orderable[]): number[] {
  const key = (t: Orderable) => (t.runsConsole ? "console" : `stage ${t.stage}`);
  let group = -1;
  return ordered.map((target, i) => {
    if (i === 0 || key(target) !== key(ordered[i - 1]!)) group++;
    return group;
  });
}

/**
 * Seconds from the first call until the last target is off: every group's calls may take their
 * full deadline, then the last group needs the time a target takes to go down.
 */
export function shutdownBudgetSeconds(
  groups: number,
  settings: Pick<ShutdownSettings, "callTimeoutSeconds" | "targetDownSeconds">,
): number {
  return groups === 0 ? 0 : groups * settings.callTimeoutSeconds + settings.targetDownSeconds;
}

export function buildPlan(
  records: readonly TargetRecord[],
  due: ReadonlyMap<string, string>,
  settings: { mode: PowerMode; shutdown: ShutdownSettings },
  now: Date,
  clusterGroups: readonly ClusterGroup[] = [],
  /** Consolidating clusters: their stage in this run and who stays (by cluster id). */
  consolidate: ReadonlyMap<string, ConsolidateInput> = new Map(),
): ShutdownPlan {
  const dueRecords = records.filter((r) => due.has(r.id));
  const sequenced = sequencedGroups(clusterGroups, new Set(dueRecords.map((r) => r.id)));
  const clusterOf = new Map(
    sequenced.flatMap((g) => g.nodes.flatMap((n) => (n.targetId ? [[n.targetId, g.id]] : []))),
  );
  const clusters = sequenced.map((g) =>
    planClusterSequence(
      g,
      dueRecords.filter((r) => clusterOf.get(r.id) === g.id),
      settings.shutdown,
      consolidate.get(g.id),
    ),
  );
  // The console's guest is set by node name; clusters that share node names all have it.
  const guestClusters = clusters.filter((c) => c.consoleGuest);
  if (guestClusters.length > 1) {
    for (const c of guestClusters) {
      c.warnings.push(
        `the console's guest is set on node ${c.consoleGuest!.node}, a node name ${guestClusters.map((g) => g.name).join(" and ")} both have: each one's ${c.consoleGuest!.node} goes down after every other node, as the console's node`,
      );
    }
  }
  const standalone = orderTargets(dueRecords.filter((r) => !clusterOf.has(r.id)));
  const after = clusters.length > 0 ? standalone.filter((r) => r.runsConsole) : [];
  const first = standalone.filter((r) => !after.includes(r));
  const firstGroups = groupIndexes(first);
  const standaloneGroups = first.length === 0 ? 0 : firstGroups[firstGroups.length - 1]! + 1;
  const byId = new Map(dueRecords.map((r) => [r.id, r]));
  // One order across every cluster (each cluster's own order kept): nodes without a monitor,
  // then monitors, the console's node last — after every other cluster's nodes too.
  const rank = { plain: 0, monitor: 1, console: 2 } as const;
  const clusterNodes = clusters
    .flatMap((c) =>
      c.nodes.map((n) => ({
        record: byId.get(n.targetId!)!,
        cluster: c.clusterId,
        rank: rank[n.role],
      })),
    )
    .sort((a, b) => a.rank - b.rank)
    .map(({ record, cluster }) => ({ record, cluster }));
  const sequence = [
    ...first.map((record, i) => ({ record, group: firstGroups[i]!, cluster: null })),
    ...clusterNodes.map((n, i) => ({ ...n, group: standaloneGroups + i })),
    ...after.map((record) => ({
      record,
      group: standaloneGroups + clusterNodes.length,
      cluster: null,
    })),
  ];
  const groupCount = sequence.length === 0 ? 0 : sequence[sequence.length - 1]!.group + 1;
  return {
    mode: settings.mode,
    plannedAt: now.toISOString(),
    targets: sequence.map(({ record, group, cluster }) => ({
      ...record,
      dueSince: due.get(record.id)!,
      group,
      request: record.endpoint ? describeShutdown(record.endpoint) : null,
      deadlineSeconds: settings.shutdown.callTimeoutSeconds,
      cluster,
      afterClusters: after.includes(record),
    })),
    clusters,
    groups: groupCount,
    callTimeoutSeconds: settings.shutdown.callTimeoutSeconds,
    targetDownSeconds: settings.shutdown.targetDownSeconds,
    // Standalone groups, then each cluster's steps (its nodes one after another), then the
    // console's standalone host: the steps follow one another.
    budgetSeconds:
      shutdownBudgetSeconds(standaloneGroups + (after.length > 0 ? 1 : 0), settings.shutdown) +
      clusters.reduce((sum, c) => sum + c.budgetSeconds, 0),
  };
}
