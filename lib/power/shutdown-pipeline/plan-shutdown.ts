import { formatDuration } from "@/lib/logs/text";
import { advance, fail, type Step } from "@/lib/pipeline/step";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { consolidateInputs } from "@/lib/power/consolidate/stage-inputs";
import { planModeOf } from "@/lib/power/shutdown/drill-mark";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { loadTargets } from "@/lib/power/targets/load-targets";
import type { ClusterSequencePlan } from "@/lib/power/clusters/sequence-plan";
import { buildPlan, ZShutdownInput, type PlannedTarget } from "../shutdown/shutdown-plan";
import type { PowerServices } from "../shutdown/services";

/**
 * Freezes the sequence into the run: the due targets in order (stages, the console's host
 * last), each one's exact request and deadline, the mode at this moment and the total budget.
 * What ShutDownTargets sends is this plan, whatever is edited meanwhile.
 */
export const planShutdown: Step<PowerServices> = {
  name: "PlanShutdown",
  maxDuration: () => 60,
  async visit(ctx) {
    const { db } = ctx.services;
    const input = ZShutdownInput.safeParse(ctx.context.get("input"));
    if (!input.success) {
      return fail(
        "This run does not say which UPS fired and which targets are due; power-shutdown runs are started by the power monitor.",
      );
    }
    const { trigger, targets, replaces, stages } = input.data;
    const settings = await readPowerSettings(db);
    const ids = targets.map((t) => t.targetId);
    const all = await loadTargets(db);
    const records = all.filter((r) => ids.includes(r.id));
    const mode = planModeOf(ctx.context.get("input"), settings.mode);
    const groups = await loadClusterGroups(db);
    const plan = buildPlan(
      records,
      new Map(targets.map((t) => [t.targetId, t.dueSince])),
      { ...settings, mode },
      new Date(),
      groups,
      await consolidateInputs(db, groups, {
        records: all,
        consoleGuest: settings.shutdown.consoleGuest,
        mode,
        firstStages: new Map((stages ?? []).map((s) => [s.clusterId, s])),
      }),
    );
    ctx.context.set("plan", plan);

    ctx.log(`${trigger.upsName}: trigger fired at ${trigger.latchedAt}: ${trigger.reason}`);
    if (replaces) {
      ctx.log(
        `takes over from failed run(s) ${replaces.join(", ")} of this outage: the trigger still holds and their targets were not called yet`,
      );
    }
    ctx.log(
      plan.mode === "armed"
        ? "mode: armed — the calls below will be sent"
        : "mode: dry-run — nothing will be sent; every call is logged as 'would POST …'",
    );
    for (const target of plan.targets.filter((t) => t.cluster === null && !t.afterClusters)) {
      ctx.log(describeStep(target));
    }
    for (const cluster of plan.clusters) {
      for (const line of describeCluster(cluster, plan.targets)) ctx.log(line);
    }
    for (const target of plan.targets.filter((t) => t.afterClusters)) {
      ctx.log(`${describeStep(target)} — after every cluster`);
    }
    for (const id of ids.filter((id) => !records.some((r) => r.id === id))) {
      ctx.log(`target ${id} was removed since it became due: left out`);
    }
    const budget = `budget ${formatDuration(plan.budgetSeconds * 1000)} (${plan.groups} group(s) × ${plan.callTimeoutSeconds} s per call + ${plan.targetDownSeconds} s to go down${plan.clusters.length > 0 ? "; the cluster sequence's steps one after another" : ""})`;
    ctx.log(budget);
    if (plan.targets.length === 0) {
      return fail("None of the due targets exists any more: nothing to shut down.");
    }
    return advance(`${plan.targets.length} target(s), ${plan.mode}, ${budget}`);
  },
};

function describeCluster(
  cluster: ClusterSequencePlan,
  targets: readonly PlannedTarget[],
): string[] {
  const how =
    cluster.consolidate?.stage === "first"
      ? `first stage of consolidating (${cluster.consolidate.mode}, ${cluster.consolidate.remainingNode ?? "no node"} stays up)`
      : "as one unit";
  return [
    `cluster ${cluster.name} ${how}${cluster.hyperConverged ? " (hyper-converged Ceph)" : ""}:`,
    ...cluster.steps.map(
      (s) => `  ${s.step}: ${s.what} — up to ${formatDuration(s.seconds * 1000)}`,
    ),
    ...cluster.nodes.map((n, i) => {
      const target = targets.find((t) => t.id === n.targetId);
      const role =
        n.role === "console"
          ? ", runs the console: last"
          : n.role === "monitor"
            ? ", Ceph monitor"
            : "";
      return `  node ${i + 1}: ${n.name}${role} — ${target?.request?.line ?? `cannot be reached: ${target?.problem ?? "unknown"}`}`;
    }),
    ...cluster.warnings.map((w) => `  note: ${w}`),
  ];
}

function describeStep(target: PlannedTarget): string {
  const what = `${target.name} (${target.kind}${target.runsConsole ? ", runs the console: last" : ""})`;
  if (!target.request)
    return `group ${target.group + 1}: ${what} — cannot be reached: ${target.problem}`;
  return `group ${target.group + 1}: ${what} — ${target.request.line}, deadline ${target.deadlineSeconds} s`;
}
