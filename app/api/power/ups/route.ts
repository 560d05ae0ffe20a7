import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { planGuardedResponse } from "@/lib/api/plan-guarded-response";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import {
  changeConfirmingArmedPlan,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { ZCreateUpsDevice } from "@/lib/power/schemas";
import { createUpsDevice, listUpsDevices } from "@/lib/power/ups-devices";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every UPS the console watches, with its source settings: `{ ups: [{ id, name, source,
 * sourceLabel, hasSecret, triggerOverrides }] }`. Secrets never: only whether one is stored.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ ups: await listUpsDevices(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/power/ups");
  }
}

/**
 * Adds a UPS (admins): `{ name, source: { type: "nut", host, port, upsName, username?,
 * password? } | { type: "snmp", version, host, port, community | user, authProtocol, authKey,
 * privProtocol, privKey }, triggerOverrides? }` → 201 `{ ups, planChange }`. The secrets are
 * sealed and never answered back.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const body = await readJsonObject(request);
    const input = parseInput(ZCreateUpsDevice, body);
    const { confirmPlanChange } = ZPlanChangeConfirmation.parse(body);
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, (db) =>
      createUpsDevice(db, input, actor),
    );
    return planGuardedResponse(outcome, (ups) => ({ ups }), 201);
  } catch (error) {
    return respondError(error, "POST /api/power/ups");
  }
}
