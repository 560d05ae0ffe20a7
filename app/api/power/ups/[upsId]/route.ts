import { z } from "zod";
import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { planGuardedResponse } from "@/lib/api/plan-guarded-response";
import { readJsonObject } from "@/lib/api/read-json-object";
import { parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import {
  changeConfirmingArmedPlan,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { ZUpdateUpsDevice } from "@/lib/power/schemas";
import { deleteUpsDevice, updateUpsDevice } from "@/lib/power/ups-devices";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Context = { params: Promise<{ upsId: string }> };
const ZUpsId = z.uuid({ error: "Not a UPS id." });

/**
 * Changes a UPS (admins): any of `name`, `source`, `triggerOverrides`. A secret left out of a
 * changed source keeps the stored one. → `{ ups, planChange }`.
 */
export async function PATCH(request: Request, { params }: Context): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const id = parseId(ZUpsId, (await params).upsId, "upsId");
    const body = await readJsonObject(request);
    const input = parseInput(ZUpdateUpsDevice, { ...body, id });
    const { confirmPlanChange } = ZPlanChangeConfirmation.parse(body);
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, (db) =>
      updateUpsDevice(db, input, actor),
    );
    return planGuardedResponse(outcome, (ups) => ({ ups }));
  } catch (error) {
    return respondError(error, "PATCH /api/power/ups/[upsId]");
  }
}

/** Removes a UPS (admins); refused (409) while it still feeds a target. → `{ planChange }`. */
export async function DELETE(request: Request, { params }: Context): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const id = parseId(ZUpsId, (await params).upsId, "upsId");
    const confirmation = ZPlanChangeConfirmation.parse(
      Object.fromEntries(new URL(request.url).searchParams),
    );
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmation.confirmPlanChange, (db) =>
      deleteUpsDevice(db, { id }, actor),
    );
    return planGuardedResponse(outcome, () => ({ deleted: id }));
  } catch (error) {
    return respondError(error, "DELETE /api/power/ups/[upsId]");
  }
}
