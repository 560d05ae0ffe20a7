import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import type { ShutdownSettings } from "@/lib/power/settings";
import type { TargetRecord } from "@/lib/power/targets/load-targets";

/**
 * The shutdown sequence of a cluster shut down as one unit (docs/power-cluster-sequence.md):
 * disarm HA, stop every guest of the cluster but the console's own, set the Ceph flags
 * (hyper-converged only), then the nodes one after another — nodes without a Ceph monitor,
 * then monitor nodes, the console's node last. Pure: the run's frozen plan and the plan preview
 * are made by this same function.
 */

/** How long DisarmHa reads the HA status back for `disarmed` before it says it did not take. */
export const HA_DISARM_WAIT_SECONDS = 60;
/** After a guest's clean shutdown timed out: time for its force-stop to show in the list. */
export const FORCE_STOP_SECONDS = 30;
/** Reading the Ceph flags back after each way of setting them. */
export const CEPH_FLAGS_WAIT_SECONDS = 5;
/**
 * How soon a step asks again what it waits for (HA's armed state, the flags, a node that should
 * stop answering). Each of these waits sits between two steps that must not overlap, so a whole
 * second per ask was time the battery paid (bench:cluster); a read-back is one small GET.
 */
export const READ_BACK_POLL_SECONDS = 0.25;
/** The guest list is larger and its wait long (guest timeouts): asked half as often. */
export const GUEST_READ_BACK_POLL_SECONDS = 0.5;

export type ClusterNodeRole = "plain" | "monitor" | "console";

export type ClusterNodeStep = {
  name: string;
  /** The node's power target in this run; null when the node is not one (it is left running). */
  targetId: string | null;
  role: ClusterNodeRole;
};

export type ClusterSequencePlan = {
  clusterId: string;
  name: string;
  hyperConverged: boolean;
  /** Node names whose API the cluster-wide calls go to, in order of preference. */
  apiNodes: string[];
  /** Due nodes in shutdown order. */
  nodes: ClusterNodeStep[];
  /** Never stopped by StopClusterGuests. */
  consoleGuest: { node: string; vmid: number } | null;
  guestTimeoutSeconds: number;
  guestParallelism: number;
  /** The seconds each step may take, in order; their sum is the cluster's budget. */
  steps: { step: string; seconds: number; what: string }[];
  budgetSeconds: number;
  /** Facts an operator must know before trusting the sequence (said in the log and the preview). */
  warnings: string[];
};

type DueMember = Pick<TargetRecord, "id" | "name" | "runsConsole" | "kind">;

/**
 * The cluster groups this run shuts down as one unit: policy `cluster` (and `consolidate`, which
 * is not built yet and falls back to it), with at least one node due. `per-host` groups are
 * left to the standalone sequence.
 */
export function sequencedGroups(
  groups: readonly ClusterGroup[],
  due: ReadonlySet<string>,
): ClusterGroup[] {
  return groups.filter(
    (g) => g.policy !== "per-host" && g.nodes.some((n) => n.targetId && due.has(n.targetId)),
  );
}

export function planClusterSequence(
  group: ClusterGroup,
  dueTargets: readonly DueMember[],
  settings: Pick<
    ShutdownSettings,
    | "callTimeoutSeconds"
    | "targetDownSeconds"
    | "guestTimeoutSeconds"
    | "guestParallelism"
    | "consoleGuest"
  >,
): ClusterSequencePlan {
  const due = new Map(dueTargets.map((t) => [t.id, t]));
  const consoleGuest =
    settings.consoleGuest && group.nodes.some((n) => n.name === settings.consoleGuest!.node)
      ? settings.consoleGuest
      : null;
  const roleOf = (node: ClusterGroup["nodes"][number]): ClusterNodeRole =>
    (node.targetId && due.get(node.targetId)?.runsConsole) || consoleGuest?.node === node.name
      ? "console"
      : node.cephMon
        ? "monitor"
        : "plain";
  const rank: Record<ClusterNodeRole, number> = { plain: 0, monitor: 1, console: 2 };
  const nodes = group.nodes
    .filter((n) => n.targetId && due.has(n.targetId))
    .map((n) => ({ name: n.name, targetId: n.targetId, role: roleOf(n) }))
    .sort((a, b) => rank[a.role] - rank[b.role] || a.name.localeCompare(b.name));

  const warnings: string[] = [];
  if (group.policy === "consolidate") {
    warnings.push(
      "policy 'consolidate' is not built yet: this cluster is shut down as one unit instead",
    );
  }
  const left = group.nodes.filter((n) => !(n.targetId && due.has(n.targetId)));
  if (left.length > 0) {
    warnings.push(
      `${left.map((n) => n.name).join(", ")} ${left.length === 1 ? "is" : "are"} not shut down by this UPS (not a protected target due now): ${left.length === 1 ? "it keeps" : "they keep"} running, ${left.length === 1 ? "its" : "their"} guests stopped with the rest`,
    );
  }
  if (settings.consoleGuest && !consoleGuest) {
    warnings.push(
      `the console's guest is set on node ${settings.consoleGuest.node}, which is not in this cluster`,
    );
  }

  const call = settings.callTimeoutSeconds;
  const steps = [
    {
      step: "DisarmHa",
      seconds: call + HA_DISARM_WAIT_SECONDS,
      what: `disarm HA (resource-mode=ignore), read back until disarmed (up to ${HA_DISARM_WAIT_SECONDS} s)`,
    },
    {
      step: "StopClusterGuests",
      seconds: call + settings.guestTimeoutSeconds + FORCE_STOP_SECONDS + call,
      what: `stop every guest${consoleGuest ? ` but ${consoleGuest.vmid} (the console's)` : ""}, ${settings.guestParallelism} at once, ${settings.guestTimeoutSeconds} s each, then force-stop (one round; each further ${settings.guestParallelism} guests add up to ${settings.guestTimeoutSeconds} s)`,
    },
    ...(group.hyperConverged
      ? [
          {
            step: "SetCephFlags",
            seconds: 2 * (call + CEPH_FLAGS_WAIT_SECONDS),
            what: "set noout, nobackfill, norecover, norebalance, read back (one by one where the bulk call did not take)",
          },
        ]
      : []),
    {
      step: "ShutDownClusterNodes",
      seconds: nodes.length * (call + settings.targetDownSeconds),
      what: `shut down ${nodes.map((n) => n.name).join(", ") || "no node"} one after another, each until it stops answering (up to ${settings.targetDownSeconds} s)`,
    },
  ];
  return {
    clusterId: group.id,
    name: group.name,
    hyperConverged: group.hyperConverged,
    // The nodes that go down last answer longest: the cluster-wide calls go there first.
    apiNodes: [...nodes].reverse().map((n) => n.name),
    nodes,
    consoleGuest,
    guestTimeoutSeconds: settings.guestTimeoutSeconds,
    guestParallelism: settings.guestParallelism,
    steps,
    budgetSeconds: steps.reduce((sum, s) => sum + s.seconds, 0),
    warnings,
  };
}
