import { and, eq, gte, isNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs, upsMonitorState } from "@/lib/db/schema";
import { ABORT_REASON } from "@/lib/pipeline/abort-reason";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import type { PowerMode } from "@/lib/power/config/settings";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown-pipeline/pipeline";
import type { ShutdownInput, ShutdownPlan } from "@/lib/power/shutdown/shutdown-plan";
import { callsInOutages } from "@/lib/power/shutdown/call-attempts";
import { verifyTargetsDown } from "@/lib/power/shutdown/verify-targets-down";
import { dueTargets } from "@/lib/power/targets/due-targets";
import { loadTargets } from "@/lib/power/targets/load-targets";
import { fromStoredLatches, type Latch } from "@/lib/power/triggers/state";

/**
 * When the console is done with a UPS's outage — so that, on NUT, it logs out of upsd as a
 * secondary upsmon does once it shuts down, and the UPS's primary upsmon (which waits for every
 * logged-in system, up to its HOSTSYNC, before it shuts its own machine down and the UPS off)
 * waits exactly as long as the console needs, no longer (lib/power/monitor/ups-loop.ts).
 */

/** One target the UPS's outage made due, as the console's records of this outage say. */
export type OutageTarget = {
  name: string;
  /** A call of this outage says it was seen down (its API stopped answering). */
  seenDown: boolean;
  /**
   * An armed run of this outage that had it ended at VerifyTargetsDown: it went down, or its
   * time to go down was over (the run failed there) — the console will do nothing more for it.
   */
  ended: boolean;
};

/**
 * | mode    | the outage's targets on this UPS                            | done                    |
 * | ------- | ----------------------------------------------------------- | ----------------------- |
 * | dry-run | any                                                         | no: nothing shuts down, |
 * |         |                                                             | the console never logs  |
 * |         |                                                             | out                     |
 * | armed   | none                                                        | yes: nothing to wait for |
 * | armed   | each seen down, or its run ended (down or past its deadline) | yes                    |
 * | armed   | one neither (no run yet, its call under way, still waited for) | no                   |
 *
 * Anything not known to be over keeps the console logged in: the primary then waits for it up
 * to HOSTSYNC, NUT's own answer to a secondary that hangs. A run lost otherwise (its step threw,
 * the operator aborted) ends nothing: a new run may still come, or a person is at work.
 */
export function doneWithOutage(mode: PowerMode, targets: readonly OutageTarget[]): boolean {
  return mode === "armed" && targets.every((t) => t.seenDown || t.ended);
}

type Reader = Pick<Database, "select">;

/**
 * The targets this UPS's latched trigger makes due (its outage), with what the calls and the
 * runs of that outage say about each. An outage is named by a target's `dueSince` (its feeds'
 * latches, lib/power/targets/due-targets.ts); a node of a consolidating cluster whose first
 * stage latched earlier is due since that stage (as start-due-shutdowns.ts starts its run), so
 * its records are looked up under either time — never under an older outage's.
 */
export async function outageTargets(
  db: Reader,
  ups: { id: string; latch: Latch },
): Promise<OutageTarget[]> {
  const latchRows = await db
    .select({
      upsId: upsMonitorState.upsId,
      latchedAt: upsMonitorState.latchedAt,
      stages: upsMonitorState.consolidateLatches,
    })
    .from(upsMonitorState);
  const latches = new Map(
    latchRows.flatMap((r) => (r.latchedAt ? [[r.upsId, r.latchedAt] as const] : [])),
  );
  latches.set(ups.id, ups.latch.at);
  const records = (await loadTargets(db)).filter((r) => r.feeds.some((f) => f.upsId === ups.id));
  const due = dueTargets(
    records.map((r) => ({ ...r, feeds: r.feeds.map((f) => f.upsId) })),
    latches,
  );
  if (due.length === 0) return [];

  // Each due target's outage times: its dueSince, and its consolidating cluster's first stage.
  const outageTimes = new Map(due.map((d) => [d.targetId, new Set([d.dueSince.getTime()])]));
  const stageTimes = new Map<string, number[]>();
  for (const row of latchRows) {
    for (const [clusterId, latch] of Object.entries(fromStoredLatches(row.stages))) {
      stageTimes.set(clusterId, [...(stageTimes.get(clusterId) ?? []), latch.at.getTime()]);
    }
  }
  if (stageTimes.size > 0) {
    for (const group of await loadClusterGroups(db)) {
      const times = group.policy === "consolidate" ? stageTimes.get(group.id) : undefined;
      if (!times) continue;
      for (const node of group.nodes) {
        outageTimes.get(node.targetId ?? "")?.add(Math.min(...times));
      }
    }
  }
  const ofOutage = (targetId: string, dueSince: Date | string) =>
    outageTimes.get(targetId)?.has(new Date(dueSince).getTime()) === true;
  const starts = [...new Set([...outageTimes.values()].flatMap((times) => [...times]))];
  const earliest = new Date(Math.min(...starts));

  const seenDown = new Set(
    (
      await callsInOutages(
        db,
        [...outageTimes.keys()],
        starts.map((time) => new Date(time)),
      )
    )
      .filter((c) => c.seenDownAt !== null && ofOutage(c.targetId, c.dueSince))
      .map((c) => c.targetId),
  );

  // A run starts once its targets are due; an hour's margin for the database's clock, which
  // stamps createdAt, against the console's, which named the outage (the keys decide anyway).
  const runRows = await db
    .select({
      status: runs.status,
      failedStep: runs.failedStep,
      failureReason: runs.failureReason,
      context: runs.context,
    })
    .from(runs)
    .where(
      and(
        isNull(runs.hostId),
        eq(runs.pipeline, POWER_SHUTDOWN),
        gte(runs.createdAt, new Date(earliest.getTime() - 3_600_000)),
      ),
    );
  const ended = new Set<string>();
  for (const { status, failedStep, failureReason, context } of runRows) {
    const input = context.input as ShutdownInput | undefined;
    const mode = (context.plan as ShutdownPlan | undefined)?.mode ?? input?.mode;
    const over =
      status === "succeeded" ||
      (status === "failed" &&
        failedStep === verifyTargetsDown.name &&
        failureReason !== ABORT_REASON);
    if (mode !== "armed" || !over) continue;
    // A consolidation's first stage hands back the nodes it did not take down.
    const handedBack = new Set((context.handedBack as string[] | undefined) ?? []);
    for (const t of input?.targets ?? []) {
      if (!handedBack.has(t.targetId) && ofOutage(t.targetId, t.dueSince)) ended.add(t.targetId);
    }
  }

  const names = new Map(records.map((r) => [r.id, r.name]));
  return due.map((d) => ({
    name: names.get(d.targetId) ?? d.targetId,
    seenDown: seenDown.has(d.targetId),
    ended: ended.has(d.targetId),
  }));
}
