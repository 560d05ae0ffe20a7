import { and, eq, gte, inArray, isNull, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerShutdownCalls, runs, upsMonitorState } from "@/lib/db/schema";
import { runOutcome } from "@/lib/pipeline/abort-reason";
import { readPowerSettings } from "@/lib/power/power-settings-store";
import type { PowerMode } from "@/lib/power/settings";
import type { ShutdownInput, ShutdownPlan } from "@/lib/power/shutdown/plan";
import { POWER_SHUTDOWN } from "@/lib/power/shutdown/pipeline";
import { startShutdownRun } from "@/lib/power/shutdown/start-shutdown-run";
import { dueTargets } from "@/lib/power/targets/due-targets";
import { loadTargets } from "@/lib/power/targets/load-targets";
import type { Latch } from "@/lib/power/triggers/state";

type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

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
 * the targets this UPS's latch makes due that no run covers yet for this outage. A run covers a
 * target when it was started for the same outage (the target's `dueSince`), was not cancelled
 * because the power came back, did not fail for a reason other than the operator's abort (up to
 * REPLACED_RUNS_PER_OUTAGE such failures are replaced), and — while armed — ran armed itself: a
 * dry-run rehearsal does not stand in for a real shutdown once an admin armed the console
 * mid-outage. A target already called for the outage is covered whatever became of its run:
 * "one call per target per outage" holds across runs (the call's claim enforces it as well).
 */
export type StartedShutdown = { runId: string; targets: number; replaces: string[] };

export async function startDueShutdowns(
  tx: Tx,
  ups: { id: string; name: string; latch: Latch },
): Promise<StartedShutdown | null> {
  await tx.execute(START_LOCK);
  const latchRows = await tx
    .select({ upsId: upsMonitorState.upsId, latchedAt: upsMonitorState.latchedAt })
    .from(upsMonitorState);
  const latches = new Map(
    latchRows.flatMap((r) => (r.latchedAt ? [[r.upsId, r.latchedAt] as const] : [])),
  );
  latches.set(ups.id, ups.latch.at);
  const records = (await loadTargets(tx)).filter((r) => r.feeds.some((f) => f.upsId === ups.id));
  const due = dueTargets(
    records.map((r) => ({ ...r, feeds: r.feeds.map((f) => f.upsId) })),
    latches,
  );
  if (due.length === 0) return null;

  const { mode } = await readPowerSettings(tx);
  const earliest = Math.min(...due.map((d) => d.dueSince.getTime()));
  const { covered, failedRuns } = await coveredOutages(
    tx,
    due.map((d) => d.targetId),
    new Date(earliest - 3_600_000),
    mode,
  );
  const uncovered = due.filter((d) => !covered.has(outageKey(d.targetId, d.dueSince)));
  if (uncovered.length === 0) return null;
  const replaces = [
    ...new Set(uncovered.flatMap((d) => failedRuns.get(outageKey(d.targetId, d.dueSince)) ?? [])),
  ];

  const input: ShutdownInput = {
    trigger: {
      upsId: ups.id,
      upsName: ups.name,
      trigger: ups.latch.trigger,
      reason: ups.latch.reason,
      latchedAt: ups.latch.at.toISOString(),
    },
    targets: uncovered.map((d) => ({ targetId: d.targetId, dueSince: d.dueSince.toISOString() })),
    mode,
    ...(replaces.length > 0 ? { replaces } : {}),
  };
  return { runId: await startShutdownRun(tx, input), targets: uncovered.length, replaces };
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
  targetIds: string[],
  since: Date,
  mode: PowerMode,
): Promise<{ covered: Set<string>; failedRuns: Map<string, string[]> }> {
  // Power runs have no host: the (host_id, created_at) index finds them without a scan.
  const rows = await tx
    .select({
      id: runs.id,
      status: runs.status,
      failureReason: runs.failureReason,
      context: runs.context,
    })
    .from(runs)
    .where(and(isNull(runs.hostId), eq(runs.pipeline, POWER_SHUTDOWN), gte(runs.createdAt, since)));
  const covered = new Set<string>();
  const failedRuns = new Map<string, string[]>();
  for (const { id, status, failureReason, context } of rows) {
    if (context.outcome === "cancelled") continue;
    const input = context.input as ShutdownInput | undefined;
    const runMode = (context.plan as ShutdownPlan | undefined)?.mode ?? input?.mode;
    if (mode === "armed" && runMode !== "armed") continue;
    const lost = runOutcome({ status, failureReason }) === "failed";
    for (const t of input?.targets ?? []) {
      const key = outageKey(t.targetId, t.dueSince);
      if (!lost) covered.add(key);
      else failedRuns.set(key, [...(failedRuns.get(key) ?? []), id]);
    }
  }
  for (const [key, ids] of failedRuns) {
    if (ids.length > REPLACED_RUNS_PER_OUTAGE) covered.add(key);
  }
  // Whatever became of its run, a target called for this outage is never called again; a
  // rehearsal's would-send covers it only while the console is in dry-run itself.
  const calls = await tx
    .select({
      targetId: powerShutdownCalls.targetId,
      dueSince: powerShutdownCalls.dueSince,
      state: powerShutdownCalls.state,
    })
    .from(powerShutdownCalls)
    .where(
      and(inArray(powerShutdownCalls.targetId, targetIds), gte(powerShutdownCalls.dueSince, since)),
    );
  for (const call of calls) {
    if (call.state !== "would_send" || mode !== "armed")
      covered.add(outageKey(call.targetId, call.dueSince));
  }
  return { covered, failedRuns };
}
