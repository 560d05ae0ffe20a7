"use server";

import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZUpdateUpsDevice } from "@/lib/power/config/schemas";
import { updateUpsDevice } from "@/lib/power/operations/ups-devices";
import { formAction } from "../action";
import { powerForm, runConfigChange } from "./config-change";

/**
 * Changes a UPS; a secret left empty keeps the stored one. Admins only; audited. While armed, a
 * change to the plan is saved only once confirmed (`confirmPlanChange`); until then the result
 * shows what it changes.
 */
export const updateUpsDeviceAction = formAction(
  {
    name: "update ups device",
    role: "admin",
    schema: withPlanChangeConfirmation(ZUpdateUpsDevice),
    // The form shows every override: one left with none clears them all.
    input: powerForm({ extra: (fields) => ({ triggerOverrides: fields.triggerOverrides ?? {} }) }),
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(
      confirmPlanChange,
      (db) => updateUpsDevice(db, input, actor),
      (ups) => ups.id,
    ),
);
