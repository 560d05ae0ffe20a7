import type { Database } from "@/lib/db/client";
import { upsMonitorState } from "@/lib/db/schema";
import type { ConsolidateInput } from "@/lib/power/clusters/sequence-plan";
import type { ClusterGroup } from "@/lib/power/clusters/load-cluster-groups";
import type { PowerMode, ShutdownSettings } from "@/lib/power/config/settings";
import { callsInOutages } from "@/lib/power/shutdown/call-attempts";
import type { PveEndpoint, TargetRecord } from "@/lib/power/targets/load-targets";
import { fromStoredLatches } from "@/lib/power/triggers/state";
import { consolidationOf } from "../clusters/remaining-node";

type Reader = Pick<Database, "select">;

/**
 * The first-stage latches that hold now, by cluster id: the times of the stage latches of every
 * UPS (a cluster fed by two UPSes may have two).
 */
export async function heldStageLatches(db: Reader): Promise<Map<string, Date[]>> {
  const rows = await db
    .select({ stages: upsMonitorState.consolidateLatches })
    .from(upsMonitorState);
  const held = new Map<string, Date[]>();
  for (const row of rows) {
    for (const [clusterId, latch] of Object.entries(fromStoredLatches(row.stages))) {
      held.set(clusterId, [...(held.get(clusterId) ?? []), latch.at]);
    }
  }
  return held;
}

/**
 * What the planner needs of each consolidating cluster beyond its group: who stays and who goes
 * (over all targets, not only the run's), the stage this run does (`firstStage`, from the run's
 * input), and the nodes its first stage already shut down in this outage — a node called under
 * a first-stage latch that still holds (a would-send counts only while in dry-run).
 */
export async function consolidateInputs(
  db: Reader,
  groups: readonly ClusterGroup[],
  context: {
    records: readonly TargetRecord[];
    consoleGuest: ShutdownSettings["consoleGuest"];
    mode: PowerMode;
    firstStages?: ReadonlyMap<string, { at: string; reason: string }>;
  },
): Promise<Map<string, ConsolidateInput>> {
  const consolidating = groups.filter((g) => g.policy === "consolidate");
  const inputs = new Map<string, ConsolidateInput>();
  if (consolidating.length === 0) return inputs;
  const held = await heldStageLatches(db);
  const plans = consolidating.map((group) => ({
    group,
    plan: consolidationOf(group, context.records, context.consoleGuest),
  }));
  const leavingIds = plans.flatMap(({ plan }) => plan.leavingTargetIds);
  const latchTimes = [...held.values()].flat();
  const calls = await callsInOutages(db, leavingIds, latchTimes);
  for (const { group, plan } of plans) {
    const latches = (held.get(group.id) ?? []).map((at) => at.getTime());
    const called = new Set(
      calls
        .filter(
          (c) =>
            latches.includes(c.dueSince.getTime()) &&
            (c.state !== "would_send" || context.mode === "dry-run"),
        )
        .map((c) => c.targetId),
    );
    const remaining = context.records.find((r) => r.id === plan.remainingTargetId);
    inputs.set(group.id, {
      plan,
      firstStage: context.firstStages?.get(group.id) ?? null,
      downAtFirst: group.nodes
        .filter((n) => n.targetId && called.has(n.targetId))
        .map((n) => n.name),
      remainingEndpoint:
        remaining?.endpoint?.kind === "pve-node" ? (remaining.endpoint as PveEndpoint) : null,
    });
  }
  return inputs;
}
