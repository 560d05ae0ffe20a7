import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { auditedPlanVersionPublication } from "@/lib/catalog/audited-catalog-changes";
import { ZPublishPlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Publishes a draft, making its template VMID required on every host: 200 `{ planVersionId }`;
 * 404 for an unknown version; 409 when it is published already.
 */
export const POST = route(
  "POST /api/catalog/versions/[versionId]/publish",
  {
    role: "admin",
    summary: "Publish a draft plan version",
    body: { schema: ZPublishPlanVersion, read: "none", fromPath: { versionId: "planVersionId" } },
    errorKeys: "field",
  },
  async ({ actor, body: { planVersionId } }) => {
    await auditedPlanVersionPublication(getDb(), actor, planVersionId);
    return json({ planVersionId });
  },
);
