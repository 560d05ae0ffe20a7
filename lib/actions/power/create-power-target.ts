"use server";

import { createPowerTarget } from "@/lib/power/operations/power-targets";
import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZCreatePowerTarget } from "@/lib/power/config/schemas";
import { formAction } from "../action";
import { powerTargetForm, runConfigChange } from "./config-change";

/**
 * Protects an onboarded host or a backup server: feeds, policy, stage, whether it runs the
 * console. Admins only; audited. While armed, a change to the plan is saved only once confirmed
 * (`confirmPlanChange`); until then the result shows what it changes.
 */
export const createPowerTargetAction = formAction(
  {
    name: "create power target",
    role: "admin",
    schema: withPlanChangeConfirmation(ZCreatePowerTarget),
    input: powerTargetForm,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(
      confirmPlanChange,
      (db) => createPowerTarget(db, input, actor),
      (target) => target.id,
    ),
);
