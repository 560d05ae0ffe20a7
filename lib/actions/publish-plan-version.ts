"use server";

import { revalidatePath } from "next/cache";
import { auditedPlanVersionPublication } from "@/lib/catalog/audited-catalog-changes";
import { ZPublishPlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { currentActor } from "@/lib/auth/actor";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

/**
 * Publishes a draft. From then on its template VMID is required on every host (until its sale
 * window ends): hosts without it build it during onboarding and fail the pre-sale check.
 */
export async function publishPlanVersionAction(
  input: FormData | { planVersionId: string },
): Promise<ActionResult<{ planVersionId: string }>> {
  try {
    const actor = await currentActor("admin");
    const { planVersionId } = ZPublishPlanVersion.parse(inputObject(input));
    await auditedPlanVersionPublication(getDb(), actor, planVersionId);
    revalidatePath("/catalog", "layout");
    return { ok: true, planVersionId };
  } catch (error) {
    return actionFailure(error, "publish plan version");
  }
}
