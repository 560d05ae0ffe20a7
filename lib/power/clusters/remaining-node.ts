import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import type { ConsolidatePlanFacts } from "./consolidation-check";
import type { ConsolidateSettings } from "@/lib/power/clusters/schemas";
import type { ShutdownSettings } from "@/lib/power/config/settings";
import type { TargetRecord } from "@/lib/power/targets/load-targets";

/** The node that stays up at the first threshold, and how it was chosen (or why none is). */
export type RemainingNode = { node: string; why: string } | { node: null; why: string };

/**
 * The node the console runs on, if it runs on this cluster: the node of a target marked as
 * running the console, else the node of its guest (`shutdown.consoleGuest`). Null otherwise.
 */
export function consoleNodeOf(
  group: Pick<ClusterGroup, "nodes">,
  records: readonly Pick<TargetRecord, "id" | "runsConsole">[],
  consoleGuest: ShutdownSettings["consoleGuest"],
): { node: string; why: string } | null {
  const marked = group.nodes.find(
    (n) => n.targetId && records.some((r) => r.id === n.targetId && r.runsConsole),
  );
  if (marked) return { node: marked.name, why: "marked as running the console" };
  if (consoleGuest && group.nodes.some((n) => n.name === consoleGuest.node)) {
    return { node: consoleGuest.node, why: `runs the console's guest ${consoleGuest.vmid}` };
  }
  return null;
}

/**
 * Which node stays: the console's own node when it runs on this cluster (it must outlive the
 * others to finish the sequence), else the one the admin chose. Never a guess: with neither, or
 * with a choice that contradicts the console's node or names no member, there is none and the
 * reason says what to set.
 */
export function remainingNodeOf(
  group: Pick<ClusterGroup, "name" | "nodes">,
  settings: Pick<ConsolidateSettings, "remainingNode">,
  consoleNode: { node: string; why: string } | null,
): RemainingNode {
  const chosen = settings.remainingNode;
  if (consoleNode) {
    if (chosen && chosen !== consoleNode.node) {
      return {
        node: null,
        why: `${chosen} is set to stay up, but the console runs on ${consoleNode.node} (${consoleNode.why}): ${consoleNode.node} would go down under the console at the first threshold. Set the node that stays to ${consoleNode.node}, or leave it empty.`,
      };
    }
    return { node: consoleNode.node, why: `the console's node: ${consoleNode.why}` };
  }
  if (!chosen) {
    return {
      node: null,
      why: `no node of ${group.name} is set to stay up and the console does not run on one: choose the node that stays`,
    };
  }
  const member = group.nodes.find((n) => n.name === chosen);
  if (!member) {
    return {
      node: null,
      why: `${chosen} is set to stay up but is not a member of ${group.name} (any more): choose a node of the cluster`,
    };
  }
  return { node: chosen, why: "chosen by an admin" };
}

/**
 * The nodes that go down at the first threshold: every member with a power target but the one
 * that stays. Members without one are not the console's to shut down: they keep running.
 */
export function leavingNodesOf(
  group: Pick<ClusterGroup, "nodes">,
  remaining: RemainingNode,
): ClusterGroup["nodes"] {
  return group.nodes.filter((n) => n.targetId && n.name !== remaining.node);
}

/** A consolidating cluster's two stages as its settings and targets make them now. */
export type Consolidation = ConsolidatePlanFacts & {
  /** The power targets of the leaving nodes, in `leaving`'s order. */
  leavingTargetIds: string[];
  /** The target of the node that stays (null: it is not protected, or none stays). */
  remainingTargetId: string | null;
};

/** Who stays and who goes at the first threshold (pure; the planner, the monitor and the check). */
export function consolidationOf(
  group: ClusterGroup,
  records: readonly Pick<TargetRecord, "id" | "runsConsole" | "enabled">[],
  consoleGuest: ShutdownSettings["consoleGuest"],
): Consolidation {
  const remaining = remainingNodeOf(
    group,
    group.consolidate,
    consoleNodeOf(group, records, consoleGuest),
  );
  const enabled = new Set(records.filter((r) => r.enabled).map((r) => r.id));
  const leaving = leavingNodesOf(group, remaining).filter((n) => enabled.has(n.targetId!));
  return {
    cluster: group.name,
    hyperConverged: group.hyperConverged,
    mode: group.consolidate.mode,
    remaining,
    leaving: leaving.map((n) => n.name),
    leavingTargetIds: leaving.map((n) => n.targetId!),
    remainingTargetId:
      group.nodes.find((n) => n.name === remaining.node && n.targetId && enabled.has(n.targetId))
        ?.targetId ?? null,
  };
}
