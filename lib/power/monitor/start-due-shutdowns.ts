import { and, eq, gte, isNull, sql } from "drizzle-orm";
import type { Transaction } from "@/lib/db/client";
import { runs, upsMonitorState } from "@/lib/db/schema";
import { runOutcome } from "@/lib/pipeline/abort-reason";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { consolidationOf } from "@/lib/power/clusters/remaining-node";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import type { PowerMode } from "@/lib/power/config/settings";
import { callCovers, callsSince } from "@/lib/power/shutdown/call-attempts";
import type { ShutdownInput, ShutdownPlan } from "@/lib/power/shutdown/shutdown-plan";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import { startShutdownRun } from "@/lib/power/shutdown-pipeline/start-shutdown-run";
import { dueTargets } from "@/lib/power/targets/due-targets";
import { unknownFeeds } from "@/lib/power/targets/feed-status";
import { loadTargets, type TargetRecord } from "@/lib/power/targets/load-targets";
import { fromStoredLatches, type Latch, type StageLatch } from "@/lib/power/triggers/state";

type Tx = Transaction;

/** Run starts are serialised: two monitors latching at once must not both start one. */
const START_LOCK = sql`select pg_advisory_xact_lock(hashtext('clupilot power-shutdown start'))`;

/**
 * How many failed runs of one target's outage the monitor replaces. A run the console lost (a
 * step timed out, errors ran out) is replaced while the trigger holds; a step that refuses for
 * good must not start a new run every second until the battery is empty.
 */
export const REPLACED_RUNS_PER_OUTAGE = 3;

/**
 * In the monitor's transaction, after its state is written: starts one power-shutdown run for
 * the targets this UPS's latches make due that no run covers yet for this outage. A run covers a
 * target when it was started for the same outage (the target's `dueSince`), was not cancelled
 * because the power came back, did not fail for a reason other than the operator's abort (up to
 * REPLACED_RUNS_PER_OUTAGE such failures are replaced), did not hand it back (a consolidation's
 * first stage whose check was not ok), and — while armed — ran armed itself: a dry-run
 * rehearsal does not stand in for a real shutdown once an admin armed the console mid-outage.
 * A target already called for the outage is covered whatever became of its run: "one call per
 * target per outage" holds across runs (the call's claim enforces it as well).
 *
 * Two kinds of latch make targets due. The trigger's latch: every target it feeds. A stage
 * latch (a consolidating cluster's first threshold, before the trigger fired): the cluster's
 * nodes but the one that stays, due since the stage latched — the run then does the cluster's
 * first stage. A node due both ways is due since the earlier, so the final threshold finds the
 * nodes the first stage took down already covered, and the node that stays goes on its own.
 * While a first stage of a cluster is still running, its nodes wait: the final stage starts
 * once it ended, with every node still up in one sequence.
 */
export type StartedShutdown = { runId: string; targets: number; replaces: string[] };

export async function startDueShutdowns(
  tx: Tx,
  ups: { id: string; name: string; latch: Latch | null; stages?: Record<string, StageLatch> },
): Promise<StartedShutdown | null> {
  await tx.execute(START_LOCK);
  const latchRows = await tx
    .select({
      upsId: upsMonitorState.upsId,
      latchedAt: upsMonitorState.latchedAt,
      dormant: upsMonitorState.latchDormant,
      stages: upsMonitorState.consolidateLatches,
    })
    .from(upsMonitorState);
  // A dormant latch (its UPS back on mains since) makes nothing due: its feed is not failing.
  const latches = new Map(
    latchRows.flatMap((r) => (r.latchedAt && !r.dormant ? [[r.upsId, r.latchedAt] as const] : [])),
  );
  if (ups.latch && !ups.latch.dormant) latches.set(ups.id, ups.latch.at);
  else latches.delete(ups.id);
  const stageLatches = new Map<string, Map<string, StageLatch>>();
  for (const row of latchRows) {
    const stages = row.upsId === ups.id ? (ups.stages ?? {}) : fromStoredLatches(row.stages);
    for (const [clusterId, latch] of Object.entries(stages)) {
      if (latch.dormant) continue;
      const byUps = stageLatches.get(clusterId) ?? new Map<string, StageLatch>();
      stageLatches.set(clusterId, byUps.set(row.upsId, latch));
    }
  }
  if (!latchRows.some((r) => r.upsId === ups.id)) {
    for (const [clusterId, latch] of Object.entries(ups.stages ?? {})) {
      if (latch.dormant) continue;
      const byUps = stageLatches.get(clusterId) ?? new Map<string, StageLatch>();
      stageLatches.set(clusterId, byUps.set(ups.id, latch));
    }
  }
  const all = await loadTargets(tx);
  const records = all.filter((r) => r.feeds.some((f) => f.upsId === ups.id));
  const fed = (list: readonly TargetRecord[]) =>
    list.map((r) => ({ ...r, feeds: r.feeds.map((f) => f.upsId) }));
  const settings = await readPowerSettings(tx);
  // Feeds the console cannot ask count as failing for a redundant host (due-targets.ts).
  const otherFeeds = [
    ...new Set(records.flatMap((r) => r.feeds.map((f) => f.upsId)).filter((id) => id !== ups.id)),
  ];
  const unknown = await unknownFeeds(
    tx,
    otherFeeds,
    new Date(),
    Math.max(5000, 5 * settings.pollIntervalMs),
  );
  // Only this UPS's own trigger starts final stages here; other UPSes' monitors start theirs.
  const finalDue = new Map(
    (ups.latch && !ups.latch.dormant ? dueTargets(fed(records), latches, unknown) : []).map((d) => [
      d.targetId,
      d.dueSince,
    ]),
  );

  const { mode } = settings;
  const latchTimes = [
    ...latches.values(),
    ...[...stageLatches.values()].flatMap((byUps) => [...byUps.values()].map((l) => l.at)),
  ].map((at) => at.getTime());
  if (latchTimes.length === 0) return null;
  // The runs of these outages, and those of the hour before (a latch may be replaced).
  const runRows = await powerRunsSince(tx, new Date(Math.min(...latchTimes) - 3_600_000));
  const { handedBack, busyClusters } = firstStageRuns(runRows);

  const stageDue = new Map<string, { dueSince: Date; clusterId: string; latch: StageLatch }>();
  const finalClusters = new Set<string>();
  const groups = (await loadClusterGroups(tx)).filter((g) => g.policy === "consolidate");
  const waiting = new Set<string>();
  for (const group of groups) {
    const members = new Set(group.nodes.flatMap((n) => (n.targetId ? [n.targetId] : [])));
    if (busyClusters.has(group.id)) {
      // Its first stage still runs: whatever is due of it waits until that run ended.
      for (const id of members) waiting.add(id);
      continue;
    }
    if ([...members].some((id) => finalDue.has(id))) {
      finalClusters.add(group.id);
      continue;
    }
    const byUps = stageLatches.get(group.id);
    if (!byUps) continue;
    const plan = consolidationOf(group, all, settings.shutdown.consoleGuest);
    const leaving = records.filter((r) => plan.leavingTargetIds.includes(r.id));
    const byTime = new Map([...byUps.values()].map((l) => [l.at.getTime(), l]));
    for (const due of dueTargets(
      fed(leaving),
      new Map([...byUps].map(([upsId, l]) => [upsId, l.at])),
    )) {
      if (handedBack.has(outageKey(due.targetId, due.dueSince))) continue;
      stageDue.set(due.targetId, {
        dueSince: due.dueSince,
        clusterId: group.id,
        latch: byTime.get(due.dueSince.getTime())!,
      });
    }
  }
  // A node of a cluster whose final stage runs now is due since its first stage, if it had one.
  for (const group of groups.filter((g) => finalClusters.has(g.id))) {
    const byUps = stageLatches.get(group.id);
    if (!byUps) continue;
    const first = Math.min(...[...byUps.values()].map((l) => l.at.getTime()));
    for (const node of group.nodes) {
      const since = node.targetId ? finalDue.get(node.targetId) : undefined;
      if (!since || since.getTime() <= first) continue;
      const stageKey = outageKey(node.targetId!, new Date(first));
      if (!handedBack.has(stageKey)) finalDue.set(node.targetId!, new Date(first));
    }
  }

  const due = [
    ...[...finalDue].map(([targetId, dueSince]) => ({ targetId, dueSince })),
    ...[...stageDue]
      .filter(([targetId]) => !finalDue.has(targetId))
      .map(([targetId, s]) => ({ targetId, dueSince: s.dueSince })),
  ].filter((d) => !waiting.has(d.targetId));
  if (due.length === 0) return null;

  const earliest = Math.min(...due.map((d) => d.dueSince.getTime()));
  const { covered, failedRuns } = await coveredOutages(
    tx,
    runRows.filter((r) => r.createdAt.getTime() >= earliest - 3_600_000),
    due.map((d) => d.targetId),
    new Date(earliest - 3_600_000),
    mode,
  );
  const uncovered = due.filter((d) => !covered.has(outageKey(d.targetId, d.dueSince)));
  if (uncovered.length === 0) return null;
  const replaces = [
    ...new Set(uncovered.flatMap((d) => failedRuns.get(outageKey(d.targetId, d.dueSince)) ?? [])),
  ];
  const stages = new Map<string, StageLatch>();
  for (const d of uncovered) {
    const stage = stageDue.get(d.targetId);
    if (stage && !finalDue.has(d.targetId)) stages.set(stage.clusterId, stage.latch);
  }
  const named = (clusterId: string) => groups.find((g) => g.id === clusterId)?.name ?? clusterId;
  const [firstStage] = [...stages].sort(([, a], [, b]) => a.at.getTime() - b.at.getTime());
  const trigger = ups.latch
    ? {
        upsId: ups.id,
        upsName: ups.name,
        trigger: ups.latch.trigger,
        reason: ups.latch.reason,
        latchedAt: ups.latch.at.toISOString(),
      }
    : {
        upsId: ups.id,
        upsName: ups.name,
        trigger: firstStage![1].trigger,
        reason: `first threshold of cluster ${named(firstStage![0])}: ${firstStage![1].reason}`,
        latchedAt: firstStage![1].at.toISOString(),
      };

  const input: ShutdownInput = {
    trigger,
    targets: uncovered.map((d) => ({ targetId: d.targetId, dueSince: d.dueSince.toISOString() })),
    mode,
    ...(replaces.length > 0 ? { replaces } : {}),
    ...(stages.size > 0
      ? {
          stages: [...stages].map(([clusterId, latch]) => ({
            clusterId,
            at: latch.at.toISOString(),
            reason: latch.reason,
          })),
        }
      : {}),
  };
  return { runId: await startShutdownRun(tx, input), targets: uncovered.length, replaces };
}

type PowerRunRow = {
  id: string;
  status: "running" | "succeeded" | "failed";
  failureReason: string | null;
  context: Record<string, unknown>;
  createdAt: Date;
};

/** The power-shutdown runs started since `since` (power runs have no host: an index finds them). */
function powerRunsSince(tx: Tx, since: Date): Promise<PowerRunRow[]> {
  return tx
    .select({
      id: runs.id,
      status: runs.status,
      failureReason: runs.failureReason,
      context: runs.context,
      createdAt: runs.createdAt,
    })
    .from(runs)
    .where(and(isNull(runs.hostId), eq(runs.pipeline, POWER_SHUTDOWN), gte(runs.createdAt, since)));
}

/**
 * From the runs' contexts: the targets a first stage handed back (`targetId@dueSince`: they wait
 * for the final threshold), and the clusters whose first stage is still running.
 */
function firstStageRuns(rows: readonly PowerRunRow[]): {
  handedBack: Set<string>;
  busyClusters: Set<string>;
} {
  const handedBack = new Set<string>();
  const busyClusters = new Set<string>();
  for (const { status, context } of rows) {
    const input = context.input as ShutdownInput | undefined;
    const back = new Set((context.handedBack as string[] | undefined) ?? []);
    for (const t of input?.targets ?? []) {
      if (back.has(t.targetId)) handedBack.add(outageKey(t.targetId, t.dueSince));
    }
    if (status === "running") for (const s of input?.stages ?? []) busyClusters.add(s.clusterId);
  }
  return { handedBack, busyClusters };
}

function outageKey(targetId: string, dueSince: Date | string): string {
  return `${targetId}@${new Date(dueSince).toISOString()}`;
}

/**
 * `targetId@dueSince` of every outage a run already covers (see startDueShutdowns), and the
 * failed runs of the outages that are not covered any more because their run failed.
 */
async function coveredOutages(
  tx: Tx,
  rows: readonly PowerRunRow[],
  targetIds: string[],
  since: Date,
  mode: PowerMode,
): Promise<{ covered: Set<string>; failedRuns: Map<string, string[]> }> {
  const covered = new Set<string>();
  const failedRuns = new Map<string, string[]>();
  for (const { id, status, failureReason, context } of rows) {
    if (context.outcome === "cancelled") continue;
    const input = context.input as ShutdownInput | undefined;
    const runMode = (context.plan as ShutdownPlan | undefined)?.mode ?? input?.mode;
    if (mode === "armed" && runMode !== "armed") continue;
    const lost = runOutcome({ status, failureReason }) === "failed";
    const back = new Set((context.handedBack as string[] | undefined) ?? []);
    for (const t of input?.targets ?? []) {
      if (back.has(t.targetId)) continue;
      const key = outageKey(t.targetId, t.dueSince);
      if (!lost) covered.add(key);
      else failedRuns.set(key, [...(failedRuns.get(key) ?? []), id]);
    }
  }
  for (const [key, ids] of failedRuns) {
    if (ids.length > REPLACED_RUNS_PER_OUTAGE) covered.add(key);
  }
  // An accepted call covers its target for this outage whatever became of its run, and so does
  // a target seen down (shutdown/call-attempts.ts, the one place of that rule).
  for (const call of await callsSince(tx, targetIds, since)) {
    if (callCovers(call, mode)) covered.add(outageKey(call.targetId, call.dueSince));
  }
  return { covered, failedRuns };
}
