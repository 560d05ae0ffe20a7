import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import type { ConsolidateMode } from "@/lib/power/clusters/schemas";
import type { ConsolidateCheck } from "@/lib/power/clusters/consolidation-check";
import type { Consolidation } from "@/lib/power/clusters/remaining-node";
import type { ShutdownSettings, Thresholds } from "@/lib/power/config/settings";
import type { PveEndpoint, TargetRecord } from "@/lib/power/targets/load-targets";

/**
 * The shutdown sequence of a cluster shut down as one unit (docs/power-cluster-sequence.md):
 * disarm HA, stop every guest of the cluster but the console's own, set the Ceph flags
 * (hyper-converged only), then the nodes one after another — nodes without a Ceph monitor,
 * then monitor nodes, the console's node last. Pure: the run's frozen plan and the plan preview
 * are made by this same function.
 *
 * A consolidating cluster (policy `consolidate`) has two stages: the first (its first threshold
 * fired, the run's input says so) checks that consolidating can work, disarms HA, migrates (or
 * stops) the guests of every node but the one that stays, and shuts those nodes down; the final
 * (the trigger) is the sequence above for the nodes still up. A first stage whose check is not
 * ok hands its nodes back: they go down with the rest, as one unit, at the final threshold.
 */

/** How long DisarmHa reads the HA status back for `disarmed` before it says it did not take. */
export const HA_DISARM_WAIT_SECONDS = 60;
/** After a guest's clean shutdown timed out: time for its force-stop to show in the list. */
export const FORCE_STOP_SECONDS = 30;
/** Reading the Ceph flags back after each way of setting them. */
export const CEPH_FLAGS_WAIT_SECONDS = 5;
/**
 * How soon a step asks again what it waits for (HA's armed state, the flags), within its visit
 * (lib/power/cluster-sequence/watch.ts). Each of these waits sits between two steps that must not overlap, so every
 * moment it is seen late is time the battery pays (bench:cluster); a read-back is one small GET.
 */
export const READ_BACK_POLL_MS = 100;
/** The guest list is larger and its wait long (guest timeouts): asked less often. */
export const GUEST_READ_BACK_POLL_MS = 250;
/**
 * A migration whose task has not ended this long after it was sent counts as failed: its guest
 * stays where it is, and so does its node until the final threshold.
 */
export const MIGRATE_TIMEOUT_SECONDS = 300;

export type ClusterNodeRole = "plain" | "monitor" | "console";

export type ClusterNodeStep = {
  name: string;
  /** The node's power target in this run; null when the node is not one (it is left running). */
  targetId: string | null;
  role: ClusterNodeRole;
};

/** A consolidating cluster's stage in this run. */
export type ConsolidateStage = {
  /** first: the first threshold fired (consolidate now); final: the trigger (the rest goes). */
  stage: "first" | "final";
  mode: ConsolidateMode;
  /** The node that stays at the first threshold; null: none can (the check fails). */
  remainingNode: string | null;
  /** How it was chosen, or why none is. */
  remainingWhy: string;
  /** The node that stays's own way in: the first stage asks its API (it is up longest). */
  remainingEndpoint: PveEndpoint | null;
  /** The protected nodes that go down at the first threshold. */
  leaving: string[];
  firstThreshold: Thresholds;
  /** First stage: the stage latch that fired. */
  fired: { at: string; reason: string } | null;
  /** Final: the nodes the first stage shut down in this outage (they stay down). */
  downAtFirst: string[];
  /** The last check (refresh, self-test, an earlier run); the first stage checks again, live. */
  lastCheck: ConsolidateCheck | null;
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
  /** Policy consolidate: the stage this run does; null for the other policies. */
  consolidate: ConsolidateStage | null;
  /**
   * A partial outage (policy `cluster`, some nodes still have power): only the due nodes go
   * down — their guests stopped (HA-managed ones through HA), Ceph `noout` for the duration,
   * those nodes powered off — while the nodes named here keep running with HA armed. Null: the
   * whole cluster goes down as one unit.
   */
  partial: { staying: string[] } | null;
};

/**
 * Rounds of guest stops: Proxmox's bulk action (and the console's own per-guest mode) stops
 * `guestParallelism` guests at a time, each up to its timeout; the last refresh's count of
 * running guests on these nodes says how many rounds. Unknown: one round, and said.
 */
export function guestRounds(
  nodes: readonly { name: string; runningGuests?: number | null }[],
  parallelism: number,
): { rounds: number; guests: number | null } {
  if (nodes.some((n) => n.runningGuests === null || n.runningGuests === undefined)) {
    return { rounds: 1, guests: null };
  }
  const guests = nodes.reduce((sum, n) => sum + (n.runningGuests ?? 0), 0);
  return { rounds: Math.max(1, Math.ceil(guests / parallelism)), guests };
}

function roundsText(r: { rounds: number; guests: number | null }, parallelism: number): string {
  return r.guests === null
    ? "one round counted: how many guests run is not known yet (the cluster's next refresh reads it)"
    : `${r.guests} guest(s) running at the last refresh: ${r.rounds} round(s) of ${parallelism}`;
}

/** What the planner knows of a consolidating cluster beyond its group (from the run and the DB). */
export type ConsolidateInput = {
  plan: Consolidation;
  /** The run does the first stage: the stage latch that fired. */
  firstStage: { at: string; reason: string } | null;
  /** The nodes called at the first threshold in this outage. */
  downAtFirst: string[];
  remainingEndpoint: PveEndpoint | null;
};

type DueMember = Pick<TargetRecord, "id" | "name" | "runsConsole" | "kind">;

/**
 * The cluster groups this run takes down in a sequence: policy `cluster` and `consolidate` (its
 * first stage or the final one), with at least one node due. `per-host` groups are left to the
 * standalone sequence.
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
  consolidate?: ConsolidateInput,
): ClusterSequencePlan {
  if (group.policy === "consolidate" && consolidate?.firstStage) {
    return planFirstStage(group, dueTargets, settings, consolidate, consolidate.firstStage);
  }
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
  if (group.ambiguity) warnings.push(ambiguityWarning(group));
  const downAtFirst = group.policy === "consolidate" ? (consolidate?.downAtFirst ?? []) : [];
  if (group.policy === "consolidate") {
    warnings.push(
      downAtFirst.length > 0
        ? `consolidate, final stage: ${downAtFirst.join(", ")} went down at the first threshold and stay down; the nodes still up go down now as one unit`
        : "consolidate: no node went down at the first threshold in this outage (it did not fire before the trigger, or its check was not ok): the whole cluster goes down as one unit",
    );
  }
  const left = group.nodes.filter(
    (n) => !(n.targetId && due.has(n.targetId)) && !downAtFirst.includes(n.name),
  );
  // Nodes that keep power (or that the console does not protect) and were last seen online:
  // under policy `cluster` only the nodes that lost power go down, and nothing cluster-wide.
  const staying = left.filter((n) => n.online !== false).map((n) => n.name);
  if (group.policy === "cluster" && staying.length > 0 && nodes.length > 0) {
    return planPartialOutage(group, nodes, staying, settings, consoleGuest, warnings);
  }
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
  const rounds = guestRounds(group.nodes, settings.guestParallelism);
  const steps = [
    {
      step: "DisarmHa",
      seconds: call + HA_DISARM_WAIT_SECONDS,
      what: `disarm HA (resource-mode=ignore), read back until disarmed (up to ${HA_DISARM_WAIT_SECONDS} s)`,
    },
    {
      step: "StopClusterGuests",
      seconds: call + rounds.rounds * settings.guestTimeoutSeconds + FORCE_STOP_SECONDS + call,
      what: `stop every guest${consoleGuest ? ` but ${consoleGuest.vmid} (the console's)` : ""}, ${settings.guestParallelism} at once, ${settings.guestTimeoutSeconds} s each, then force-stop (${roundsText(rounds, settings.guestParallelism)})`,
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
  return sequencePlan(group, nodes, settings, {
    consoleGuest,
    steps,
    warnings,
    consolidate:
      group.policy === "consolidate"
        ? stageOf(group, "final", consolidate ?? null, null, downAtFirst)
        : null,
    partial: null,
  });
}

/**
 * The frame every cluster plan shares: its nodes, the cluster-wide calls' preferred nodes (`first`
 * before the nodes that go down last, which answer longest), the guest settings, the steps and
 * the budget they add up to.
 */
function sequencePlan(
  group: ClusterGroup,
  nodes: ClusterNodeStep[],
  settings: Pick<ShutdownSettings, "guestTimeoutSeconds" | "guestParallelism">,
  parts: Pick<
    ClusterSequencePlan,
    "consoleGuest" | "steps" | "warnings" | "consolidate" | "partial"
  > & { first?: string[] },
): ClusterSequencePlan {
  // Keys in the order the plans always had: a plan is stored and compared as JSON.
  return {
    clusterId: group.id,
    name: group.label,
    hyperConverged: group.hyperConverged,
    apiNodes: [...(parts.first ?? []), ...[...nodes].reverse().map((n) => n.name)],
    nodes,
    consoleGuest: parts.consoleGuest,
    guestTimeoutSeconds: settings.guestTimeoutSeconds,
    guestParallelism: settings.guestParallelism,
    steps: parts.steps,
    budgetSeconds: parts.steps.reduce((sum, s) => sum + s.seconds, 0),
    warnings: parts.warnings,
    consolidate: parts.consolidate,
    partial: parts.partial,
  };
}

/** The Ceph flags a partial outage sets: only noout (the others would stall the nodes that stay). */
export const PARTIAL_OUTAGE_CEPH_FLAGS = ["noout"] as const;

/**
 * A partial outage of a cluster under policy `cluster`: the UPS (or UPSes) that ran dry feed
 * only some of its nodes. Disarming HA and stopping every guest of the whole cluster would take
 * down what still has power; instead only the nodes that lost power go down: their guests
 * stopped (an HA-managed guest's shutdown goes through HA, which stops it instead of moving it
 * onto a node that may not hold it), `noout` so Ceph does not rebalance while they are away,
 * then those nodes one after another. The rest keeps running with HA armed. The cluster-wide
 * calls go to the nodes that go down, the last one first: a node that stays is not a target of
 * this run, so the plan holds no endpoint for it.
 */
function planPartialOutage(
  group: ClusterGroup,
  nodes: ClusterNodeStep[],
  staying: string[],
  settings: Pick<
    ShutdownSettings,
    "callTimeoutSeconds" | "targetDownSeconds" | "guestTimeoutSeconds" | "guestParallelism"
  >,
  consoleGuest: { node: string; vmid: number } | null,
  warnings: string[],
): ClusterSequencePlan {
  const call = settings.callTimeoutSeconds;
  const leaving = nodes.map((n) => n.name).join(", ");
  const rounds = guestRounds(
    group.nodes.filter((n) => nodes.some((d) => d.name === n.name)),
    settings.guestParallelism,
  );
  const steps = [
    {
      step: "StopClusterGuests",
      seconds: call + rounds.rounds * settings.guestTimeoutSeconds + FORCE_STOP_SECONDS + call,
      what: `stop the guests of ${leaving}${consoleGuest ? ` but ${consoleGuest.vmid} (the console's)` : ""}, ${settings.guestParallelism} at once, ${settings.guestTimeoutSeconds} s each, then force-stop (HA-managed guests stop through HA; ${roundsText(rounds, settings.guestParallelism)}); HA stays armed for ${staying.join(", ")}`,
    },
    ...(group.hyperConverged
      ? [
          {
            step: "SetCephFlags",
            seconds: 2 * (call + CEPH_FLAGS_WAIT_SECONDS),
            what: "set noout (only: the nodes that stay keep Ceph working), read back",
          },
        ]
      : []),
    {
      step: "ShutDownClusterNodes",
      seconds: nodes.length * (call + settings.targetDownSeconds),
      what: `shut down ${leaving} one after another, each until it stops answering (up to ${settings.targetDownSeconds} s); ${staying.join(", ")} keep running`,
    },
  ];
  return sequencePlan(group, nodes, settings, {
    consoleGuest,
    steps,
    warnings: [
      `partial outage: only ${leaving} lost power; ${staying.join(", ")} keep running — HA stays armed, only the guests of ${leaving} are stopped, Ceph gets noout for the duration (policy "whole cluster, always" takes every node down as one unit instead)`,
      ...warnings,
    ],
    consolidate: null,
    partial: { staying },
  });
}

/**
 * A cluster the console cannot tell apart from another of the same name is planned so that
 * either reading is safe: each group goes down as one unit through its own hosts, every group's
 * HA is disarmed and its guests stopped before any node of any cluster goes down (on one
 * cluster seen twice the second round finds it done), and the nodes of all clusters go down in
 * one order (no monitor, monitors, the console's node last). Merging them would send the
 * cluster-wide calls through one of them only; per host or consolidating would take nodes down
 * before the others' HA is disarmed.
 */
function ambiguityWarning(group: ClusterGroup): string {
  return `AMBIGUOUS: ${group.ambiguity}. Fail-safe: it goes down as one unit through its own hosts — HA disarmed and every guest stopped before any node of any cluster goes down — and the nodes of every cluster in one order${group.policyNote ? `; ${group.policyNote}` : ""}. Tell the console which hosts are one cluster: see the cluster card on /power/clusters.`;
}

function stageOf(
  group: ClusterGroup,
  stage: ConsolidateStage["stage"],
  input: ConsolidateInput | null,
  fired: ConsolidateStage["fired"],
  downAtFirst: string[],
): ConsolidateStage {
  return {
    stage,
    mode: group.consolidate.mode,
    remainingNode: input?.plan.remaining.node ?? null,
    remainingWhy: input?.plan.remaining.why ?? "not planned",
    remainingEndpoint: input?.remainingEndpoint ?? null,
    leaving: input?.plan.leaving ?? [],
    firstThreshold: group.consolidate.firstThreshold,
    fired,
    downAtFirst,
    lastCheck: group.consolidateCheck,
  };
}

/**
 * The first stage of a consolidating cluster: its due nodes (the leaving ones) in name order;
 * the check, HA disarmed, their guests migrated to (or stopped for) the node that stays, then
 * those nodes one after another. The cluster-wide calls go to the node that stays first.
 */
function planFirstStage(
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
  input: ConsolidateInput,
  fired: { at: string; reason: string },
): ClusterSequencePlan {
  const due = new Set(dueTargets.map((t) => t.id));
  const nodes = group.nodes
    .filter((n) => n.targetId && due.has(n.targetId))
    .map((n) => ({ name: n.name, targetId: n.targetId, role: "plain" as const }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const remaining = input.plan.remaining.node;
  const consoleGuest =
    settings.consoleGuest && group.nodes.some((n) => n.name === settings.consoleGuest!.node)
      ? settings.consoleGuest
      : null;
  const call = settings.callTimeoutSeconds;
  const mode = group.consolidate.mode;
  const to = remaining ?? "the node that stays";
  const steps = [
    {
      step: "CheckConsolidation",
      seconds: 3 * call,
      what: `check that consolidating can work (memory of ${to}, the guests' storage, privileges, HA); not ok: nothing now, the cluster goes down as one unit at the final threshold`,
    },
    {
      step: "DisarmHa",
      seconds: call + HA_DISARM_WAIT_SECONDS,
      what: `disarm HA (resource-mode=ignore), read back until disarmed (up to ${HA_DISARM_WAIT_SECONDS} s): ${to} is left without quorum`,
    },
    mode === "migrate"
      ? {
          step: "MigrateGuests",
          seconds: call + MIGRATE_TIMEOUT_SECONDS,
          what: `migrate the running guests of ${nodes.map((n) => n.name).join(", ")} to ${to} (VMs live, containers restarted), ${settings.guestParallelism} at once, each read back on ${to} (up to ${MIGRATE_TIMEOUT_SECONDS} s each; each further ${settings.guestParallelism} guests add as much)`,
        }
      : {
          step: "StopClusterGuests",
          seconds: call + settings.guestTimeoutSeconds + FORCE_STOP_SECONDS + call,
          what: `stop the guests of ${nodes.map((n) => n.name).join(", ")}, ${settings.guestParallelism} at once, ${settings.guestTimeoutSeconds} s each, then force-stop`,
        },
    {
      step: "ShutDownClusterNodes",
      seconds: nodes.length * (call + settings.targetDownSeconds),
      what: `shut down ${nodes.map((n) => n.name).join(", ") || "no node"} one after another, each until it stops answering (up to ${settings.targetDownSeconds} s); ${to} keeps running until the final threshold`,
    },
  ];
  return sequencePlan(group, nodes, settings, {
    first: remaining ? [remaining] : [],
    consoleGuest,
    steps,
    warnings: [
      `consolidate, first stage (${fired.reason}): ${mode === "migrate" ? "migrate" : "stop"} the guests of ${nodes.map((n) => n.name).join(", ")}${mode === "migrate" ? ` to ${to}` : ""} and shut those nodes down; ${to} runs until the final threshold`,
      ...(group.consolidateCheck
        ? [`last check (${group.consolidateCheck.checkedAt}): ${group.consolidateCheck.summary}`]
        : ["consolidation was never checked before: the first stage checks now"]),
    ],
    consolidate: stageOf(group, "first", input, fired, []),
    partial: null,
  });
}
