import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { createPlan } from "@/lib/catalog/manage-catalog";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Adds a plan: 201 `{ planId }`; 409 with a `slug` field error when the slug is taken. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = (await requestActor(request, "admin")).name;
    const input = ZCreatePlan.parse(await readJson(request));
    return json({ planId: await createPlan(getDb(), input, actor) }, 201);
  } catch (error) {
    return respondError(error, "POST /api/catalog/plans");
  }
}
