"use server";

import { withPlanChangeConfirmation } from "@/lib/power/queries/plan-change";
import { ZCreateUpsDevice } from "@/lib/power/config/schemas";
import { createUpsDevice } from "@/lib/power/operations/ups-devices";
import { formAction } from "../action";
import { powerForm, runConfigChange } from "./config-change";

/**
 * Adds a UPS to watch; its secrets are sealed and never shown again. Admins only; audited. While
 * armed, a change to the plan is saved only once confirmed (`confirmPlanChange`); until then the
 * result shows what it changes.
 */
export const createUpsDeviceAction = formAction(
  {
    name: "create ups device",
    role: "admin",
    schema: withPlanChangeConfirmation(ZCreateUpsDevice),
    input: powerForm(),
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input: { confirmPlanChange, ...input } }) =>
    runConfigChange(
      confirmPlanChange,
      (db) => createUpsDevice(db, input, actor),
      (ups) => ups.id,
    ),
);
