"use server";

import { auditedPlanVersionPublication } from "@/lib/catalog/audited-catalog-changes";
import { ZPublishPlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { action } from "./action";

/**
 * Publishes a draft. From then on its template VMID is required on every host (until its sale
 * window ends): hosts without it build it during onboarding and fail the pre-sale check.
 */
export const publishPlanVersionAction = action(
  {
    name: "publish plan version",
    role: "admin",
    schema: ZPublishPlanVersion,
    revalidate: [["/catalog", "layout"]],
  },
  async ({ actor, input: { planVersionId } }) => {
    await auditedPlanVersionPublication(getDb(), actor, planVersionId);
    return { planVersionId };
  },
);
