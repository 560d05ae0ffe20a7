"use server";

import { updatePowerTarget } from "@/lib/power/operations/power-targets";
import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZUpdatePowerTarget } from "@/lib/power/config/schemas";
import { formAction } from "../action";
import { powerTargetForm, runConfigChange } from "./config-change";

/**
 * Changes a target's protection (a backup server's token secret left empty stays). Admins only;
 * audited. While armed, a change to the plan is saved only once confirmed (`confirmPlanChange`);
 * until then the result shows what it changes.
 */
export const updatePowerTargetAction = formAction(
  {
    name: "update power target",
    role: "admin",
    schema: withPlanChangeConfirmation(ZUpdatePowerTarget),
    input: powerTargetForm,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(
      confirmPlanChange,
      (db) => updatePowerTarget(db, input, actor),
      (target) => target.id,
    ),
);
