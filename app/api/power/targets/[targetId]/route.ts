import { z } from "zod";
import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { planGuardedResponse } from "@/lib/api/plan-guarded-response";
import { readJsonObject } from "@/lib/api/read-json-object";
import { parseId, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { deletePowerTarget, updatePowerTarget } from "@/lib/power/power-targets";
import {
  changeConfirmingArmedPlan,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { ZUpdatePowerTarget } from "@/lib/power/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Context = { params: Promise<{ targetId: string }> };
const ZTargetId = z.uuid({ error: "Not a target id." });

/**
 * Changes a target's protection (admins): `feeds` (UPS ids), `feedPolicy` (`all` | `any`),
 * `stage`, `runsConsole`, `enabled`; for a backup server also `name`, `address`, `port`,
 * `tokenId`, `tokenSecret` (left out: the stored one stays), `certSha256`.
 * → `{ target, planChange }`.
 */
export async function PATCH(request: Request, { params }: Context): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const id = parseId(ZTargetId, (await params).targetId, "targetId");
    const body = await readJsonObject(request);
    const input = parseInput(ZUpdatePowerTarget, { ...body, id });
    const { confirmPlanChange } = ZPlanChangeConfirmation.parse(body);
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, (db) =>
      updatePowerTarget(db, input, actor),
    );
    return planGuardedResponse(outcome, (target) => ({ target }));
  } catch (error) {
    return respondError(error, "PATCH /api/power/targets/[targetId]");
  }
}

/** Stops protecting a target (admins); its host stays. → `{ deleted, planChange }`. */
export async function DELETE(request: Request, { params }: Context): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const id = parseId(ZTargetId, (await params).targetId, "targetId");
    const confirmation = ZPlanChangeConfirmation.parse(
      Object.fromEntries(new URL(request.url).searchParams),
    );
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmation.confirmPlanChange, (db) =>
      deletePowerTarget(db, { id }, actor),
    );
    return planGuardedResponse(outcome, () => ({ deleted: id }));
  } catch (error) {
    return respondError(error, "DELETE /api/power/targets/[targetId]");
  }
}
