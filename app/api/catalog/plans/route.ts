import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { auditedPlanCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Adds a plan: 201 `{ planId }`; 409 with a `slug` field error when the slug is taken. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = ZCreatePlan.parse(await readJson(request));
    const planId = await auditedPlanCreation(getDb(), actor, input);
    return json({ planId }, 201);
  } catch (error) {
    return respondError(error, "POST /api/catalog/plans");
  }
}
