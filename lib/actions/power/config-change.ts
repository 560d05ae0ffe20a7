import type { z } from "zod";
import { parseInput } from "@/lib/api/parse-input";
import type { Actor } from "@/lib/auth/actor";
import { getDb, type Database } from "@/lib/db/client";
import {
  changeConfirmingArmedPlan,
  ZPlanChangeConfirmation,
  type PlanChange,
} from "@/lib/power/queries/plan-change";
import { powerFormInput, type BlankMeans } from "./power-form-input";

/**
 * What a power configuration form hears back: saved (with what it did to the plan), or — while
 * armed — not saved yet because it would change the plan: the form shows `planChange` and
 * submits again with `confirmPlanChange` once the admin agreed.
 */
export type ConfigChangeResult = { saved: boolean; planChange: PlanChange; id: string | null };

/**
 * The body every power configuration action shares after its role check: the form as the
 * domain's input (field errors keyed by the field's path), the armed-plan guard, the change.
 */
export async function runConfigChange<S extends z.ZodType, T>(
  actor: Actor,
  raw: FormData | Record<string, unknown>,
  options: {
    schema: S;
    blank?: BlankMeans;
    /** Fields the form carries that are not part of the schema's input (e.g. the id). */
    extra?: (input: Record<string, unknown>) => Record<string, unknown>;
    change: (db: Database, data: z.output<S>, actor: Actor) => Promise<T>;
    idOf?: (result: T) => string;
  },
): Promise<ConfigChangeResult> {
  const input = powerFormInput(raw, options.blank);
  const data = parseInput(options.schema, { ...input, ...options.extra?.(input) });
  const { confirmPlanChange } = ZPlanChangeConfirmation.parse(input);
  const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, (db) =>
    options.change(db, data, actor),
  );
  return outcome.saved
    ? {
        saved: true,
        planChange: outcome.planChange,
        id: options.idOf ? options.idOf(outcome.result) : null,
      }
    : { saved: false, planChange: outcome.planChange, id: null };
}
