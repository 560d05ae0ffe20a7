import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { planPreview } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { PowerMode } from "@/lib/power/config/settings";

export type DrillTarget = {
  id: string;
  name: string;
  kind: "pve-node" | "pbs";
  stage: number;
  runsConsole: boolean;
  /** The exact request, secret masked; null when the target cannot be reached (`problem`). */
  request: string | null;
  problem: string | null;
};

/** What a drill of one UPS's outage would run: the preview's sequence for that UPS. */
export type DrillPlan = {
  ups: { id: string; name: string };
  consoleMode: PowerMode;
  targets: DrillTarget[];
  budgetSeconds: number;
};

/**
 * The targets a drill of `upsId`'s outage covers, in sequence order with their requests: exactly
 * what the plan preview shows for that UPS (the same function), so the drill rehearses what an
 * outage would do and its confirmation lists what the run will plan.
 */
export async function drillPlan(db: Database, upsId: string, now = new Date()): Promise<DrillPlan> {
  const preview = await planPreview(db, now);
  const group = preview.groups.find((g) => g.ups.id === upsId);
  if (!group) {
    throw new AppError(
      "not_found",
      "No UPS with this id feeds a target or is watched: choose one from the power page.",
    );
  }
  return {
    ups: { id: group.ups.id, name: group.ups.name },
    consoleMode: preview.mode,
    budgetSeconds: group.budgetSeconds,
    targets: group.targets.map((t) => ({
      id: t.id,
      name: t.name,
      kind: t.kind,
      stage: t.stage,
      runsConsole: t.runsConsole,
      request: t.request?.line ?? null,
      problem: t.problem,
    })),
  };
}
