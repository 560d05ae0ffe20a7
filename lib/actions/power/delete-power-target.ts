"use server";

import { deletePowerTarget } from "@/lib/power/operations/power-targets";
import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZPowerTargetRef } from "@/lib/power/config/schemas";
import { action } from "../action";
import { powerForm, runConfigChange } from "./config-change";

/**
 * Stops protecting a target (its host stays, only its power settings go). Admins
 * only; audited. While armed, a change to the plan is saved only once confirmed.
 */
export const deletePowerTargetAction = action(
  {
    name: "delete power target",
    role: "admin",
    schema: withPlanChangeConfirmation(ZPowerTargetRef),
    input: powerForm(),
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(confirmPlanChange, (db) => deletePowerTarget(db, input, actor)),
);
