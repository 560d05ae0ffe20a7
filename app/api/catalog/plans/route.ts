import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { createPlan } from "@/lib/catalog/manage-catalog";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Adds a plan: 201 `{ planId }`; 409 with a `slug` field error when the slug is taken. */
export async function POST(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const input = ZCreatePlan.parse(await readJson(request));
    const db = getDb();
    const planId = await audited(
      db,
      {
        actor,
        action: "catalog.plan_create",
        target: (id) => `plan:${id}`,
        detail: { slug: input.slug },
      },
      () => createPlan(db, input, actor.name),
    );
    return json({ planId }, 201);
  } catch (error) {
    return respondError(error, "POST /api/catalog/plans");
  }
}
