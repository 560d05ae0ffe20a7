import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { auditedPlanVersionPublication } from "@/lib/catalog/audited-catalog-changes";
import { ZPublishPlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Publishes a draft, making its template VMID required on every host: 200 `{ planVersionId }`;
 * 404 for an unknown version; 409 when it is published already.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ versionId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "admin");
    const { planVersionId } = ZPublishPlanVersion.parse({
      planVersionId: (await params).versionId,
    });
    await auditedPlanVersionPublication(getDb(), actor, planVersionId);
    return json({ planVersionId });
  } catch (error) {
    return respondError(error, "POST /api/catalog/versions/[versionId]/publish");
  }
}
