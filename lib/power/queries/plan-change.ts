import { z } from "zod";
import type { Database } from "@/lib/db/client";
import type { PlanPreview } from "@/lib/power/shutdown-pipeline/plan-preview";
import { readPowerPlan, type PowerPlanView } from "./power-plan";
import { readPowerMode } from "./power-settings";

/**
 * What a configuration change does to the shutdown plan, in lines an admin reads before saving
 * while armed: targets that come under the plan or leave it, a target's stage, feeds, policy or
 * request, and per UPS the sequence and the budget before ⇒ after. Drawn from two plan
 * previews and arming lists, so it is exactly what the preview (and a run) would do.
 */
export type PlanChange = { changed: boolean; lines: string[] };

function sequence(group: PlanPreview["groups"][number]): string {
  if (group.targets.length === 0) return "nothing";
  const groups: string[][] = [];
  for (const target of group.targets) {
    (groups[target.group] ??= []).push(
      target.runsConsole ? `${target.name} (console)` : target.name,
    );
  }
  return groups.map((names) => names.join(" + ")).join(" → ");
}

const SETTING_WORDS: [keyof PowerPlanView["armingTargets"][number], string][] = [
  ["stage", "stage"],
  ["feedPolicy", "goes down on"],
  ["feeds", "fed by"],
  ["runsConsole", "runs the console"],
  ["request", "request"],
];

function targetLines(before: PowerPlanView, after: PowerPlanView): string[] {
  const lines: string[] = [];
  for (const target of after.armingTargets) {
    const old = before.armingTargets.find((t) => t.id === target.id);
    if (!old) {
      lines.push(`${target.name}: now under the plan`);
      continue;
    }
    for (const [key, words] of SETTING_WORDS) {
      const was = JSON.stringify(old[key]);
      const now = JSON.stringify(target[key]);
      if (was !== now) lines.push(`${target.name}: ${words} ${was} ⇒ ${now}`.replaceAll('"', ""));
    }
  }
  for (const target of before.armingTargets) {
    if (after.armingTargets.some((t) => t.id === target.id)) continue;
    const why = after.unprotected.find((t) => t.id === target.id)?.why ?? "removed";
    lines.push(`${target.name}: no longer under the plan (${why})`);
  }
  return lines;
}

export function describePlanChange(before: PowerPlanView, after: PowerPlanView): PlanChange {
  const lines: string[] = targetLines(before, after);
  const ids = [...new Set([...before.groups, ...after.groups].map((g) => g.ups.id))];
  for (const id of ids) {
    const was = before.groups.find((g) => g.ups.id === id);
    const now = after.groups.find((g) => g.ups.id === id);
    const name = (now ?? was)!.ups.name;
    // A UPS that feeds nothing, before and after, changes no plan.
    if (!was) {
      if (now!.targets.length > 0)
        lines.push(`${name}: new — would shut down ${sequence(now!)}; ${now!.summary}`);
      continue;
    }
    if (!now) {
      if (was.targets.length > 0)
        lines.push(`${name}: no longer in the plan (it shut down ${sequence(was)})`);
      continue;
    }
    if (sequence(was) !== sequence(now)) {
      lines.push(`${name}: ${sequence(was)} ⇒ ${sequence(now)}`);
    }
    if (was.summary !== now.summary) lines.push(`${name}: ${was.summary} ⇒ ${now.summary}`);
  }
  return { changed: lines.length > 0, lines };
}

/** Ends a preview's transaction: thrown by one preview, and caught by that one alone. */
class PreviewDone extends Error {
  override readonly name = "PreviewDone";
  after: PowerPlanView | null = null;
}

/**
 * The plan change `apply` would make, without making it: `apply` runs in a transaction that is
 * rolled back (its audit entry, events and live notifications with it). `apply` receives that
 * transaction as its database; the domain functions open savepoints inside it.
 *
 * The rollback is this very call's own error, recognised by identity — not drizzle's
 * `tx.rollback()`, whose TransactionRollbackError is a class of the drizzle-orm copy that made
 * `db`: the process-wide handle is kept on globalThis (lib/db/client.ts) and may come from
 * another copy than this module's import (Next.js bundles), and then `instanceof` missed it and
 * the preview answered 500 instead of the 409 with the plan change (issue 29, item 13).
 */
export async function previewPlanChange(
  db: Database,
  apply: (db: Database) => Promise<unknown>,
): Promise<PlanChange> {
  const before = await readPowerPlan(db);
  const done = new PreviewDone("plan change previewed; rolling it back");
  try {
    await db.transaction(async (tx) => {
      const inside = tx as unknown as Database;
      await apply(inside);
      done.after = await readPowerPlan(inside);
      throw done;
    });
  } catch (error) {
    if (error !== done) throw error;
  }
  return describePlanChange(before, done.after!);
}

/** Makes the change and says what it did to the plan. */
export async function applyWithPlanChange<T>(
  db: Database,
  apply: (db: Database) => Promise<T>,
): Promise<{ result: T; planChange: PlanChange }> {
  const before = await readPowerPlan(db);
  const result = await apply(db);
  return { result, planChange: describePlanChange(before, await readPowerPlan(db)) };
}

export type GuardedChange<T> =
  { saved: true; result: T; planChange: PlanChange } | { saved: false; planChange: PlanChange };

/**
 * A configuration change made while armed that would change the armed plan is not saved until
 * the admin has seen what it changes and confirmed (`confirmed`): then it is saved, and the
 * outcome says what it did to the plan. In dry-run nothing real depends on the plan, so the
 * change is saved at once (and still says what it changed).
 */
export async function changeConfirmingArmedPlan<T>(
  db: Database,
  confirmed: boolean,
  apply: (db: Database) => Promise<T>,
): Promise<GuardedChange<T>> {
  if (!confirmed && (await readPowerMode(db)).mode === "armed") {
    const planChange = await previewPlanChange(db, apply);
    if (planChange.changed) return { saved: false, planChange };
  }
  const { result, planChange } = await applyWithPlanChange(db, apply);
  return { saved: true, result, planChange };
}

/** How a form or a JSON body says "I have seen the plan change; save it". */
export const ZPlanChangeConfirmation = z.object({
  // Left out is "not confirmed" (the default says so to the API document, too).
  confirmPlanChange: z
    .preprocess(
      (value) => value === true || value === "true" || value === "yes" || value === "on",
      z.boolean(),
    )
    .default(false),
});

/**
 * A configuration change's input together with its `confirmPlanChange`: one body, checked by
 * both schemas at once, so every refused field is named in one answer.
 */
export function withPlanChangeConfirmation<S extends z.ZodType>(schema: S) {
  return z.intersection(schema, ZPlanChangeConfirmation);
}
