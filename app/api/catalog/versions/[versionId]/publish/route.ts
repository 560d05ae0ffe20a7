import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { publishPlanVersion } from "@/lib/catalog/manage-catalog";
import { ZPublishPlanVersion } from "@/lib/catalog/schemas";
import { audited } from "@/lib/audit/record-audit";
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
    const db = getDb();
    await audited(
      db,
      { actor, action: "catalog.version_publish", target: `plan_version:${planVersionId}` },
      () => publishPlanVersion(db, planVersionId, actor.name),
    );
    return json({ planVersionId });
  } catch (error) {
    return respondError(error, "POST /api/catalog/versions/[versionId]/publish");
  }
}
