"use server";

import { revalidatePath } from "next/cache";
import { auditedPlanVersionCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { currentActor } from "@/lib/auth/actor";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type CreatePlanVersionResult = ActionResult<{ planVersionId: string }>;

/** Drafts the plan's next version. A draft requires nothing of any host until it is published. */
export async function createPlanVersionAction(
  _previous: CreatePlanVersionResult | null,
  input: FormData | Record<string, unknown>,
): Promise<CreatePlanVersionResult> {
  try {
    const actor = await currentActor("admin");
    const parsed = ZCreatePlanVersion.parse(inputObject(input));
    const planVersionId = await auditedPlanVersionCreation(getDb(), actor, parsed);
    revalidatePath("/catalog", "layout");
    return { ok: true, planVersionId };
  } catch (error) {
    return actionFailure(error, "create plan version");
  }
}
