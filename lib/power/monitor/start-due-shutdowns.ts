import { and, eq, gte, isNull, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs, upsMonitorState } from "@/lib/db/schema";
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
 * In the monitor's transaction, after its state is written: starts one power-shutdown run for
 * the targets this UPS's latch makes due that no run covers yet for this outage. A run covers a
 * target when it was started for the same outage (the target's `dueSince`), was not cancelled
 * because the power came back, and — while armed — ran armed itself: a dry-run rehearsal does
 * not stand in for a real shutdown once an admin armed the console mid-outage.
 */
export async function startDueShutdowns(
  tx: Tx,
  ups: { id: string; name: string; latch: Latch },
): Promise<string | null> {
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
  const covered = await coveredOutages(tx, new Date(earliest - 3_600_000), mode);
  const uncovered = due.filter((d) => !covered.has(`${d.targetId}@${d.dueSince.toISOString()}`));
  if (uncovered.length === 0) return null;

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
  };
  return startShutdownRun(tx, input);
}

/** `targetId@dueSince` of every outage a run already covers (see startDueShutdowns). */
async function coveredOutages(tx: Tx, since: Date, mode: PowerMode): Promise<Set<string>> {
  // Power runs have no host: the (host_id, created_at) index finds them without a scan.
  const rows = await tx
    .select({ context: runs.context })
    .from(runs)
    .where(and(isNull(runs.hostId), eq(runs.pipeline, POWER_SHUTDOWN), gte(runs.createdAt, since)));
  const covered = new Set<string>();
  for (const { context } of rows) {
    if (context.outcome === "cancelled") continue;
    const input = context.input as ShutdownInput | undefined;
    const runMode = (context.plan as ShutdownPlan | undefined)?.mode ?? input?.mode;
    if (mode === "armed" && runMode !== "armed") continue;
    for (const t of input?.targets ?? []) covered.add(`${t.targetId}@${t.dueSince}`);
  }
  return covered;
}
