import { advance, type Step } from "@/lib/pipeline/step";
import { CLUSTER_LANE, recordInstantAction, startAction } from "@/lib/power/records/run-actions";
import type { ClusterSequencePlan } from "@/lib/power/clusters/sequence-plan";
import {
  clusterStepRun,
  handBack,
  nodeTargets,
  report,
  type Ctx,
  type SequenceRun,
} from "@/lib/power/cluster-sequence/sequence-context";
import type { PowerServices } from "@/lib/power/shutdown/services";
import type { PveEndpoint } from "@/lib/power/targets/load-targets";
import type { ConsolidateCheck } from "../clusters/consolidation-check";
import { checkConsolidation } from "./read-facts";
import { saveConsolidateCheck } from "./save-check";

type CheckState = Record<string, { verdict: ConsolidateCheck["verdict"] }>;

/** The cluster's protected members this run can ask, by node name (the node that stays too). */
export function memberEndpoints(
  run: SequenceRun,
  cluster: ClusterSequencePlan,
): Map<string, PveEndpoint> {
  const endpoints = new Map<string, PveEndpoint>();
  const remaining = cluster.consolidate?.remainingEndpoint;
  if (remaining) endpoints.set(remaining.nodeName, remaining);
  for (const target of nodeTargets(run.plan, cluster)) {
    if (target.endpoint?.kind === "pve-node")
      endpoints.set(target.endpoint.nodeName, target.endpoint);
  }
  return endpoints;
}

/**
 * First step of a consolidation's first stage: asks the cluster, live, whether consolidating can
 * work (lib/power/clusters/consolidation-check.ts) and shows the answer (the run log, the timeline, the power events, the
 * cluster card). Anything but ok — could not check included — and the stage does nothing: its
 * nodes are handed back, to go down with the rest as one unit at the final threshold. Dry-run
 * sends nothing, not even a read: the last check decides, and the log says which one.
 */
export const checkConsolidationStep: Step<PowerServices> = {
  name: "CheckConsolidation",
  maxDuration: () => 300,
  async visit(ctx) {
    const ready = await clusterStepRun<CheckState, ClusterSequencePlan>(ctx, {
      stateKey: "consolidate:check",
      none: "no consolidation in this run",
      select: (run) => run.prepared.filter((c) => c.consolidate?.stage === "first"),
    });
    if (ready.outcome) return ready.outcome;
    const { run, items, state, armed } = ready;
    const outcomes: string[] = [];
    for (const cluster of items) {
      const done = state[cluster.clusterId];
      if (done) {
        outcomes.push(`${cluster.name}: ${done.verdict}`);
        continue;
      }
      const check = armed ? await checkLive(ctx, run, cluster) : await checkRehearsed(ctx, cluster);
      state[cluster.clusterId] = { verdict: check?.verdict ?? "could-not-check" };
      ctx.context.set("consolidate:check", state);
      if (check?.verdict === "ok") {
        outcomes.push(`${cluster.name}: ok`);
        continue;
      }
      const why = check ? check.problems.join("; ") : "it was never checked";
      handBack(
        ctx,
        cluster.nodes.flatMap((n) => (n.targetId ? [n.targetId] : [])),
      );
      await report(ctx, run, {
        severity: "critical",
        kind: "consolidate.fell_back",
        message: `${cluster.name}: NOT consolidating — ${check?.verdict === "failed" ? "it cannot work" : "it could not be checked"}: ${why}. Nothing is done now: ${cluster.nodes.map((n) => n.name).join(", ")} keep running and the whole cluster goes down as one unit at the final threshold.`,
        data: { clusterId: cluster.clusterId, check },
      });
      outcomes.push(
        `${cluster.name}: ${check?.verdict ?? "never checked"}, falls back to one unit`,
      );
    }
    return advance(outcomes.join("; "));
  },
};

async function checkLive(
  ctx: Ctx,
  run: SequenceRun,
  cluster: ClusterSequencePlan,
): Promise<ConsolidateCheck> {
  const { db } = ctx.services;
  const stage = cluster.consolidate!;
  const action = await startAction(db, {
    runId: ctx.runId,
    lane: CLUSTER_LANE,
    label: "check consolidation",
    request: `read the guests, their configs and storage, HA and the free memory of ${stage.remainingNode ?? "the node that stays"}`,
  });
  const check = await checkConsolidation(
    db,
    { name: cluster.name },
    {
      cluster: cluster.name,
      hyperConverged: cluster.hyperConverged,
      mode: stage.mode,
      remaining: stage.remainingNode
        ? { node: stage.remainingNode, why: stage.remainingWhy }
        : { node: null, why: stage.remainingWhy },
      leaving: cluster.nodes.map((n) => n.name),
      leavingTargetIds: cluster.nodes.flatMap((n) => (n.targetId ? [n.targetId] : [])),
      remainingTargetId: null,
    },
    {
      endpoints: memberEndpoints(run, cluster),
      timeoutMs: run.plan.callTimeoutSeconds * 1000,
      onSecret: ctx.services.maskSecret,
    },
  );
  await saveConsolidateCheck(db, cluster.clusterId, check);
  for (const line of [...check.findings, ...check.problems]) ctx.log(`${cluster.name}: ${line}`);
  ctx.log(`${cluster.name}: ${check.summary}`);
  await action.finish({
    outcome: check.verdict === "ok" ? "ok" : "failed",
    detail: check.summary,
  });
  return check;
}

/** Dry-run: nothing is asked; the last check stands in, and the log says which one. */
async function checkRehearsed(
  ctx: Ctx,
  cluster: ClusterSequencePlan,
): Promise<ConsolidateCheck | null> {
  const last = cluster.consolidate!.lastCheck;
  const detail = last
    ? `dry-run: nothing asked; the last check (${last.checkedAt}) stands in: ${last.summary}`
    : "dry-run: nothing asked, and consolidation was never checked: it falls back";
  ctx.log(`${cluster.name}: would check consolidation (${detail})`);
  await recordInstantAction(ctx.services.db, {
    runId: ctx.runId,
    lane: CLUSTER_LANE,
    label: "check consolidation",
    request: "read the guests, their configs and storage, HA and the free memory",
    outcome: "would-do",
    detail,
  });
  return last;
}
