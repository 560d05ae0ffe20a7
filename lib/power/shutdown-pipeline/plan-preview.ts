import { formatDuration } from "@/lib/logs/text";
import type { Database } from "@/lib/db/client";
import type { PowerPlanSnapshot } from "../config/armed-plan-snapshot";
import type { ClusterSequencePlan } from "../clusters/sequence-plan";
import { loadClusterGroups } from "../clusters/load-cluster-groups";
import { consolidateInputs } from "../consolidate/stage-inputs";
import { upsDevices } from "@/lib/db/schema";
import { readPowerSettings } from "../config/power-settings-store";
import { effectiveTriggers } from "../config/settings";
import { runtimeAtTrigger } from "../triggers/runtime-at-trigger";
import { buildPlan, orderTargets, type PlannedTarget } from "../shutdown/shutdown-plan";
import { dueTargets } from "../targets/due-targets";
import { loadTargets, type TargetRecord } from "../targets/load-targets";
import { describeShutdown } from "../targets/shutdown-call";
import { readMonitorStates } from "../triggers/monitor-state-store";

/**
 * The exact sequence the console would run right now, per UPS: if that UPS's trigger fired at
 * this moment (with the other UPSes as they are), which targets would be shut down, in which
 * order, with which requests and deadlines, and whether the total time budget fits in the
 * runtime the UPS reports.
 */

export type PreviewGroup = {
  ups: {
    id: string;
    name: string;
    reachable: boolean | null;
    onBattery: boolean | null;
    chargePercent: number | null;
    runtimeSeconds: number | null;
    readingAt: string | null;
    latched: boolean;
    /** Once every target it feeds is seen down, the UPS is asked to cycle its output (off by default). */
    outputCycle: boolean;
  };
  targets: Omit<PlannedTarget, "endpoint" | "dueSince">[];
  /** Clusters this UPS takes down as one unit: each one's steps, node order and budget. */
  clusters: ClusterSequencePlan[];
  /** `all`-policy targets this UPS alone does not bring down: the feeds still needed. */
  heldBack: { id: string; name: string; waitingFor: string[] }[];
  budgetSeconds: number;
  /** The runtime left when the trigger fires (lib/power/triggers/runtime-at-trigger.ts); null: unknown. */
  reserveSeconds: number | null;
  /** Which trigger row gives that runtime, or why it cannot be told. */
  reserveFrom: string;
  /** How many seconds the budget exceeds the reserve (0 when it fits or is unknown). */
  shortfallSeconds: number;
  verdict: "ok" | "short" | "unknown" | "nothing";
  /** `budget 40 s, runtime at the trigger 5 min 0 s (runtime below 5 min 0 s): OK`. */
  summary: string;
};

export type PlanPreview = {
  mode: "dry-run" | "armed";
  armedAt: string | null;
  armedBy: string | null;
  callTimeoutSeconds: number;
  targetDownSeconds: number;
  groups: PreviewGroup[];
  /** Targets no UPS can bring down: without feeds, or turned off. */
  unprotected: { id: string; name: string; why: string }[];
  /** While armed: how the plan differs from the one confirmed when arming. */
  changedSinceArmed: { added: string[]; removed: string[]; changed: string[] } | null;
  /** Early shedding as set: what arming also lets happen before the main trigger. */
  shed: { enabled: boolean; afterMinutes: number; tag: string; listed: number };
};

export async function planPreview(db: Database, now = new Date()): Promise<PlanPreview> {
  // In sequence: `db` may be a transaction (a previewed plan change), one query at a time.
  const settings = await readPowerSettings(db);
  const records = await loadTargets(db);
  const states = await readMonitorStates(db);
  const overrides = new Map(
    (
      await db
        .select({
          id: upsDevices.id,
          overrides: upsDevices.triggerOverrides,
          outputCycle: upsDevices.outputCycle,
        })
        .from(upsDevices)
    ).map((d) => [d.id, d]),
  );
  const clusterGroups = await loadClusterGroups(db);
  // Consolidating clusters: who stays, who goes, what their first stage already took down.
  const consolidate = await consolidateInputs(db, clusterGroups, {
    records,
    consoleGuest: settings.shutdown.consoleGuest,
    mode: settings.mode,
  });
  const upsList = [
    ...new Map(records.flatMap((r) => r.feeds.map((f) => [f.upsId, f.upsName] as const))),
  ].map(([id, name]) => ({ id, name }));
  for (const state of states) {
    if (!upsList.some((u) => u.id === state.upsId))
      upsList.push({ id: state.upsId, name: state.name });
  }
  upsList.sort((a, b) => a.name.localeCompare(b.name));
  const latched = new Map(
    states.flatMap((s) => (s.state.latch ? [[s.upsId, s.state.latch.at] as const] : [])),
  );

  const groups = upsList.map((ups): PreviewGroup => {
    const state = states.find((s) => s.upsId === ups.id)?.state;
    const fed = records.filter((r) => r.feeds.some((f) => f.upsId === ups.id));
    const ifFired = new Map(latched).set(ups.id, latched.get(ups.id) ?? now);
    const due = new Map(
      dueTargets(
        fed.map((r) => ({ ...r, feeds: r.feeds.map((f) => f.upsId) })),
        ifFired,
      ).map((d) => [d.targetId, d.dueSince.toISOString()]),
    );
    // The run's own planner, clusters included: the preview is what a run would do.
    const plan = buildPlan(fed, due, settings, now, clusterGroups, consolidate);
    const heldBack = fed
      .filter((r) => r.enabled && !due.has(r.id))
      .map((r) => ({
        id: r.id,
        name: r.name,
        waitingFor: r.feeds.filter((f) => !ifFired.has(f.upsId)).map((f) => f.upsName),
      }));
    const reading = state?.lastReading ?? null;
    // What is left when the trigger fires, not what the UPS reports on mains today.
    const reserve = runtimeAtTrigger(
      effectiveTriggers(settings.triggers, overrides.get(ups.id)?.overrides),
      reading,
    );
    const reserveSeconds = reserve.seconds;
    const verdict =
      plan.targets.length === 0
        ? "nothing"
        : reserveSeconds === null
          ? "unknown"
          : plan.budgetSeconds <= reserveSeconds
            ? "ok"
            : "short";
    const shortfallSeconds = verdict === "short" ? plan.budgetSeconds - reserveSeconds! : 0;
    const budget = `budget ${formatDuration(plan.budgetSeconds * 1000)}`;
    const reserveFrom = reserve.seconds === null ? reserve.why : reserve.row;
    const summary =
      verdict === "nothing"
        ? "nothing would be shut down"
        : verdict === "unknown"
          ? `${budget}, runtime at the trigger unknown (${reserveFrom})`
          : `${budget}, runtime at the trigger ${formatDuration(reserveSeconds! * 1000)} (${reserveFrom}): ${verdict === "ok" ? "OK" : `TOO SHORT by ${minutes(shortfallSeconds)}`}`;
    return {
      ups: {
        id: ups.id,
        name: ups.name,
        reachable: state?.reachable ?? null,
        onBattery: reading?.onBattery ?? null,
        chargePercent: reading?.chargePercent ?? null,
        runtimeSeconds: reading?.runtimeSeconds ?? null,
        readingAt: reading?.at.toISOString() ?? null,
        latched: latched.has(ups.id),
        outputCycle: overrides.get(ups.id)?.outputCycle === true,
      },
      targets: plan.targets.map(
        ({ endpoint: _endpoint, dueSince: _dueSince, ...target }) => target,
      ),
      // The node that stays's way in (credential ids) is for the run, not the browser.
      clusters: plan.clusters.map((c) =>
        c.consolidate ? { ...c, consolidate: { ...c.consolidate, remainingEndpoint: null } } : c,
      ),
      heldBack,
      budgetSeconds: plan.budgetSeconds,
      reserveSeconds,
      reserveFrom,
      shortfallSeconds,
      verdict,
      summary,
    };
  });

  const unprotected = records.flatMap((r) =>
    !r.enabled
      ? [{ id: r.id, name: r.name, why: "turned off" }]
      : r.feeds.length === 0
        ? [{ id: r.id, name: r.name, why: "no UPS feeds it" }]
        : [],
  );
  const current = planSnapshot(records);
  return {
    mode: settings.mode,
    armedAt: settings.armedAt?.toISOString() ?? null,
    armedBy: settings.armedBy,
    callTimeoutSeconds: settings.shutdown.callTimeoutSeconds,
    targetDownSeconds: settings.shutdown.targetDownSeconds,
    groups,
    unprotected,
    changedSinceArmed:
      settings.mode === "armed"
        ? diffSnapshots(settings.armedPlan ?? { targets: [] }, current)
        : null,
    shed: {
      enabled: settings.shed.enabled,
      afterMinutes: settings.shed.afterMinutes,
      tag: settings.shed.tag,
      listed: settings.shed.guests.length,
    },
  };
}

/** A shortfall in whole minutes, rounded up: "7 min", "1 min". */
function minutes(seconds: number): string {
  return `${Math.max(1, Math.ceil(seconds / 60))} min`;
}

/** Every protected target in sequence order, as an arming confirmation lists it. */
export function planSnapshot(records: readonly TargetRecord[]): PowerPlanSnapshot {
  return {
    targets: orderTargets(records.filter((r) => r.enabled && r.feeds.length > 0)).map((r) => ({
      id: r.id,
      name: r.name,
      kind: r.kind,
      stage: r.stage,
      runsConsole: r.runsConsole,
      feedPolicy: r.feedPolicy,
      feeds: r.feeds.map((f) => f.upsName),
      request: r.endpoint ? describeShutdown(r.endpoint).line : `cannot be reached: ${r.problem}`,
    })),
  };
}

function diffSnapshots(
  armed: PowerPlanSnapshot,
  now: PowerPlanSnapshot,
): { added: string[]; removed: string[]; changed: string[] } {
  const before = new Map(armed.targets.map((t) => [t.id, t]));
  const after = new Map(now.targets.map((t) => [t.id, t]));
  return {
    added: now.targets.filter((t) => !before.has(t.id)).map((t) => t.name),
    removed: armed.targets.filter((t) => !after.has(t.id)).map((t) => t.name),
    changed: now.targets
      .filter((t) => before.has(t.id) && !sameEntry(before.get(t.id)!, t))
      .map((t) => t.name),
  };
}

type SnapshotEntry = PowerPlanSnapshot["targets"][number];

/** Field by field: the stored snapshot is jsonb, whose key order is not the one written. */
function sameEntry(a: SnapshotEntry, b: SnapshotEntry): boolean {
  return (
    a.name === b.name &&
    a.kind === b.kind &&
    a.stage === b.stage &&
    a.runsConsole === b.runsConsole &&
    a.feedPolicy === b.feedPolicy &&
    a.feeds.join("\n") === b.feeds.join("\n") &&
    a.request === b.request
  );
}
