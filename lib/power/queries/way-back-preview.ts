import { and, desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerBackGuests } from "@/lib/db/schema";
import type { ClusterSequencePlan } from "@/lib/power/clusters/sequence-plan";
import { buildPowerBackPlan, type ShutdownRunRecord } from "@/lib/power/power-back/back-plan";
import { backPlanView, type BackPlanView } from "@/lib/power/power-back/back-plan-view";
import type { RecordedGuest } from "@/lib/power/records/guests-before";
import type { PlanPreview, PreviewGroup } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { PlannedTarget, ShutdownPlan } from "@/lib/power/shutdown/shutdown-plan";
import type { TargetRecord } from "@/lib/power/targets/load-targets";

/**
 * The way back beside one UPS's shutdown in the plan preview (issue 30, item 6): if that UPS's
 * outage ran the sequence shown and mains came back, what the way back would do. Made by
 * buildPowerBackPlan — PlanPowerBack's own function — over the shutdown the preview shows, as a
 * run that did every step would have recorded it (HA disarmed where its sequence disarms HA, the
 * Ceph flags set where it sets them). The guests are what a shutdown records as it stops them;
 * before an outage the latest record is the one to show: each cluster's and standalone host's
 * guests as the latest run that listed them (a real outage's or a drill's, dry-run too) found
 * them, with when.
 */
export type WayBackPreview = {
  plan: BackPlanView;
  /** The runs the guests were read from, newest first; empty: no run listed these nodes yet. */
  guestsFrom: { runId: string; recordedAt: string }[];
};

type Reader = Pick<Database, "select">;

/** The way back of each group of `preview`, by UPS id, in the preview's mode. */
export async function wayBackPreviews(
  db: Reader,
  preview: PlanPreview,
  records: readonly TargetRecord[],
  guestParallelism: number,
  now = new Date(),
): Promise<Record<string, WayBackPreview>> {
  const endpoints = new Map(records.map((r) => [r.id, r.endpoint]));
  const result: Record<string, WayBackPreview> = {};
  for (const group of preview.groups) {
    const plan = asShutdownPlan(group, preview, endpoints, now);
    const guests = await latestGuestsOf(db, plan);
    const back = buildPowerBackPlan({
      runs: [asCompletedRun(plan)],
      guests,
      mode: preview.mode,
      guestParallelism,
      now,
    });
    const from = new Map<string, Date>();
    for (const g of guests) {
      const seen = from.get(g.runId);
      if (!seen || g.recordedAt > seen) from.set(g.runId, g.recordedAt);
    }
    result[group.ups.id] = {
      plan: await backPlanView(db, back),
      guestsFrom: [...from]
        .sort(([, a], [, b]) => b.getTime() - a.getTime())
        .map(([runId, at]) => ({ runId, recordedAt: at.toISOString() })),
    };
  }
  return result;
}

/** The preview group as the frozen plan of a shutdown run: its targets with their endpoints. */
function asShutdownPlan(
  group: PreviewGroup,
  preview: PlanPreview,
  endpoints: ReadonlyMap<string, TargetRecord["endpoint"]>,
  now: Date,
): ShutdownPlan {
  return {
    mode: preview.mode,
    plannedAt: now.toISOString(),
    targets: group.targets.map((t): PlannedTarget => ({
      ...t,
      endpoint: endpoints.get(t.id) ?? null,
      dueSince: now.toISOString(),
    })),
    clusters: group.clusters,
    groups: Math.max(0, ...group.targets.map((t) => t.group + 1)),
    callTimeoutSeconds: preview.callTimeoutSeconds,
    targetDownSeconds: preview.targetDownSeconds,
    budgetSeconds: group.budgetSeconds,
  };
}

/**
 * What a shutdown run that did every step of `plan` leaves in its context for the way back:
 * `cluster:ha` disarmed where the sequence has DisarmHa, `cluster:ceph` set where it has
 * SetCephFlags (the keys and values the cluster steps record, read by buildPowerBackPlan).
 */
export function asCompletedRun(plan: ShutdownPlan): ShutdownRunRecord {
  const has = (c: ClusterSequencePlan, step: string) => c.steps.some((s) => s.step === step);
  return {
    id: "preview",
    context: {
      plan,
      "cluster:ha": Object.fromEntries(
        plan.clusters
          .filter((c) => has(c, "DisarmHa"))
          .map((c) => [c.clusterId, { done: "disarmed" }]),
      ),
      "cluster:ceph": Object.fromEntries(
        plan.clusters
          .filter((c) => has(c, "SetCephFlags"))
          .map((c) => [c.clusterId, { done: "set" }]),
      ),
    },
  };
}

/**
 * The guests the latest run recorded for each part of `plan`: per cluster (its records carry the
 * cluster), per standalone target (its records carry the target) — never by node name alone,
 * which two clusters may share ("pve1"). Oldest row first within each.
 */
async function latestGuestsOf(db: Reader, plan: ShutdownPlan): Promise<RecordedGuest[]> {
  const scopes = [
    ...plan.clusters.map((c) => eq(powerBackGuests.clusterId, c.clusterId)),
    ...plan.targets
      .filter((t) => t.cluster === null && t.endpoint?.kind === "pve-node")
      .map((t) => eq(powerBackGuests.targetId, t.id)),
  ];
  const rows: RecordedGuest[] = [];
  for (const scope of scopes) {
    const [latest] = await db
      .select({ runId: powerBackGuests.runId })
      .from(powerBackGuests)
      .where(scope)
      .orderBy(desc(powerBackGuests.recordedAt), desc(powerBackGuests.id))
      .limit(1);
    if (!latest) continue;
    rows.push(
      ...(await db
        .select()
        .from(powerBackGuests)
        .where(and(scope, eq(powerBackGuests.runId, latest.runId)))
        .orderBy(powerBackGuests.id)),
    );
  }
  return rows;
}
