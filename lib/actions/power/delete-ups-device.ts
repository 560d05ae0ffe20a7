"use server";

import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZUpsDeviceRef } from "@/lib/power/config/schemas";
import { deleteUpsDevice } from "@/lib/power/operations/ups-devices";
import { action } from "../action";
import { powerForm, runConfigChange } from "./config-change";

/**
 * Removes a UPS, its readings and its state; refused while it still feeds a target. Admins
 * only; audited. While armed, a change to the plan is saved only once confirmed.
 */
export const deleteUpsDeviceAction = action(
  {
    name: "delete ups device",
    role: "admin",
    schema: withPlanChangeConfirmation(ZUpsDeviceRef),
    input: powerForm(),
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(confirmPlanChange, (db) => deleteUpsDevice(db, input, actor)),
);
