import { z } from "zod";
import { POWER_MODES, type PowerMode, type ShutdownSettings } from "@/lib/power/settings";
import type { TargetRecord } from "@/lib/power/targets/load-targets";
import { describeShutdown, type ShutdownRequest } from "@/lib/power/targets/shutdown-call";

/**
 * The shutdown sequence for standalone targets: configured stages ascending, the host the
 * console runs on in a group of its own at the very end. Within a group the calls go out
 * together, each under its own deadline; groups follow one another. The same function orders
 * the run's frozen plan and the preview, so the preview is what a run would do.
 */

/** What starts a `power-shutdown` run: which UPS fired, and the targets due with their outage. */
export const ZShutdownInput = z.object({
  trigger: z.object({
    upsId: z.uuid(),
    upsName: z.string(),
    trigger: z.string(),
    reason: z.string(),
    latchedAt: z.iso.datetime(),
  }),
  targets: z.array(z.object({ targetId: z.uuid(), dueSince: z.iso.datetime() })).min(1),
  /** The mode when the run started (PlanShutdown reads it again and freezes that). */
  mode: z.enum(POWER_MODES).optional(),
});
export type ShutdownInput = z.infer<typeof ZShutdownInput>;

export type PlannedTarget = TargetRecord & {
  /** When it became due in this outage (names the outage for "one call per target"). */
  dueSince: string;
  /** 0-based position of its group in the sequence. */
  group: number;
  /** The exact request; null when the target cannot be reached (`problem`). */
  request: ShutdownRequest | null;
  deadlineSeconds: number;
};

export type ShutdownPlan = {
  mode: PowerMode;
  plannedAt: string;
  targets: PlannedTarget[];
  groups: number;
  callTimeoutSeconds: number;
  targetDownSeconds: number;
  budgetSeconds: number;
};

type Orderable = Pick<TargetRecord, "stage" | "runsConsole" | "name">;

/** Stages ascending, then by name; the console's own host last, whatever its stage. */
export function orderTargets<T extends Orderable>(targets: readonly T[]): T[] {
  return [...targets].sort(
    (a, b) =>
      Number(a.runsConsole) - Number(b.runsConsole) ||
      a.stage - b.stage ||
      a.name.localeCompare(b.name),
  );
}

/** The group index of each target, in the given (ordered) sequence. */
export function groupIndexes(ordered: readonly Orderable[]): number[] {
  const key = (t: Orderable) => (t.runsConsole ? "console" : `stage ${t.stage}`);
  let group = -1;
  return ordered.map((target, i) => {
    if (i === 0 || key(target) !== key(ordered[i - 1]!)) group++;
    return group;
  });
}

/**
 * Seconds from the first call until the last target is off: every group's calls may take their
 * full deadline, then the last group needs the time a target takes to go down.
 */
export function shutdownBudgetSeconds(groups: number, settings: ShutdownSettings): number {
  return groups === 0 ? 0 : groups * settings.callTimeoutSeconds + settings.targetDownSeconds;
}

export function buildPlan(
  records: readonly TargetRecord[],
  due: ReadonlyMap<string, string>,
  settings: { mode: PowerMode; shutdown: ShutdownSettings },
  now: Date,
): ShutdownPlan {
  const ordered = orderTargets(records.filter((r) => due.has(r.id)));
  const groups = groupIndexes(ordered);
  const groupCount = ordered.length === 0 ? 0 : groups[groups.length - 1]! + 1;
  return {
    mode: settings.mode,
    plannedAt: now.toISOString(),
    targets: ordered.map((record, i) => ({
      ...record,
      dueSince: due.get(record.id)!,
      group: groups[i]!,
      request: record.endpoint ? describeShutdown(record.endpoint) : null,
      deadlineSeconds: settings.shutdown.callTimeoutSeconds,
    })),
    groups: groupCount,
    callTimeoutSeconds: settings.shutdown.callTimeoutSeconds,
    targetDownSeconds: settings.shutdown.targetDownSeconds,
    budgetSeconds: shutdownBudgetSeconds(groupCount, settings.shutdown),
  };
}
