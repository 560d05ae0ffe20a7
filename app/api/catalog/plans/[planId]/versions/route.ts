import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
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
export const POST = route(
  "POST /api/catalog/plans/[planId]/versions",
  {
    role: "admin",
    summary: "Draft a plan's next version",
    body: { schema: ZCreatePlanVersion, read: "json", fromPath: { planId: "planId" } },
    errorKeys: "field",
  },
  async ({ actor, body }) =>
    json({ planVersionId: await auditedPlanVersionCreation(getDb(), actor, body) }, 201),
);
