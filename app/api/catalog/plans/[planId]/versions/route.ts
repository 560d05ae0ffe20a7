import { requestActor } from "@/lib/auth/actor";
import { json, readJson, respondError } from "@/lib/api/respond";
import { auditedPlanVersionCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Drafts the plan's next version: 201 `{ planVersionId }`; 404 for an unknown plan. The plan is
 * the one in the path (a `planId` in the body is ignored); the body carries the rest of
 * ZCreatePlanVersion.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ planId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const body = await readJson(request);
    // A body that is not an object (an array, a number) then fails on every field: 400.
    const fields = typeof body === "object" && body !== null && !Array.isArray(body) ? body : {};
    const input = ZCreatePlanVersion.parse({ ...fields, planId: (await params).planId });
    const planVersionId = await auditedPlanVersionCreation(getDb(), actor, input);
    return json({ planVersionId }, 201);
  } catch (error) {
    return respondError(error, "POST /api/catalog/plans/[planId]/versions");
  }
}
