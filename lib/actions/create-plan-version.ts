"use server";

import { revalidatePath } from "next/cache";
import { createPlanVersion } from "@/lib/catalog/manage-catalog";
import { ZCreatePlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
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
    const db = getDb();
    const planVersionId = await audited(
      db,
      {
        actor,
        action: "catalog.version_create",
        target: (id) => `plan_version:${id}`,
        detail: { planId: parsed.planId },
      },
      () => createPlanVersion(db, parsed, actor.name),
    );
    revalidatePath("/catalog", "layout");
    return { ok: true, planVersionId };
  } catch (error) {
    return actionFailure(error, "create plan version");
  }
}
