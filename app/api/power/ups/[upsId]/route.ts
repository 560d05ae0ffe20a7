import { z } from "zod";
import { respondToGuardedChange } from "@/lib/api/plan-guarded-response";
import { route } from "@/lib/api/route";
import {
  withPlanChangeConfirmation,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { ZUpdateUpsDevice } from "@/lib/power/config/schemas";
import { deleteUpsDevice, updateUpsDevice } from "@/lib/power/operations/ups-devices";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const params = { upsId: z.uuid({ error: "Not a UPS id." }) };

/**
 * Changes a UPS (admins): any of `name`, `source`, `triggerOverrides`, `outputCycle`. A secret left out of a
 * changed source keeps the stored one. → `{ ups, planChange }`.
 */
export const PATCH = route(
  "PATCH /api/power/ups/[upsId]",
  {
    role: "admin",
    summary: "Change a UPS",
    params,
    body: { schema: withPlanChangeConfirmation(ZUpdateUpsDevice), fromPath: { upsId: "id" } },
  },
  async ({ actor, body: { confirmPlanChange, ...input } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => updateUpsDevice(db, input, actor),
      (ups) => ({ ups }),
    ),
);

/** Removes a UPS (admins); refused (409) while it still feeds a target. → `{ planChange }`. */
export const DELETE = route(
  "DELETE /api/power/ups/[upsId]",
  {
    role: "admin",
    summary: "Remove a UPS (refused while it feeds a target)",
    params,
    query: { schema: ZPlanChangeConfirmation },
    errorKeys: "field",
  },
  async ({ actor, params: { upsId: id }, query: { confirmPlanChange } }) =>
    respondToGuardedChange(
      confirmPlanChange,
      (db) => deleteUpsDevice(db, { id }, actor),
      () => ({ deleted: id }),
    ),
);
