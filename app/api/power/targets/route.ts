import { requestActor } from "@/lib/auth/actor";
import { parseInput } from "@/lib/api/parse-input";
import { planGuardedResponse } from "@/lib/api/plan-guarded-response";
import { readJsonObject } from "@/lib/api/read-json-object";
import { json, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { createPowerTarget } from "@/lib/power/power-targets";
import {
  changeConfirmingArmedPlan,
  ZPlanChangeConfirmation,
} from "@/lib/power/queries/plan-change";
import { listTargetProtection } from "@/lib/power/queries/target-protection";
import { ZCreatePowerTarget } from "@/lib/power/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every protected target with its protection: `{ targets: [{ id, kind, name, endpoint, feeds,
 * feedPolicy, stage, runsConsole, enabled, token: { answer, reason, asOf } }] }`.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    return json({ targets: await listTargetProtection(getDb()) });
  } catch (error) {
    return respondError(error, "GET /api/power/targets");
  }
}

/**
 * Protects a target (admins): an onboarded host `{ kind: "pve-node", hostId, feeds, feedPolicy,
 * stage?, runsConsole? }`, or a backup server `{ kind: "pbs", name, address, port?, tokenId,
 * tokenSecret, certSha256, feeds, feedPolicy, stage?, runsConsole? }` → 201 `{ target,
 * planChange }`. The token's secret is sealed and never answered back.
 */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const body = await readJsonObject(request);
    const input = parseInput(ZCreatePowerTarget, body);
    const { confirmPlanChange } = ZPlanChangeConfirmation.parse(body);
    const outcome = await changeConfirmingArmedPlan(getDb(), confirmPlanChange, (db) =>
      createPowerTarget(db, input, actor),
    );
    return planGuardedResponse(outcome, (target) => ({ target }), 201);
  } catch (error) {
    return respondError(error, "POST /api/power/targets");
  }
}
