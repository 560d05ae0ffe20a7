"use server";

import { revalidatePath } from "next/cache";
import { auditedPlanCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { currentActor } from "@/lib/auth/actor";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

export type CreatePlanResult = ActionResult<{ planId: string }>;

/** Adds a plan (what is sold); it sells nothing until one of its versions is published. */
export async function createPlanAction(
  _previous: CreatePlanResult | null,
  input: FormData | Record<string, unknown>,
): Promise<CreatePlanResult> {
  try {
    const actor = await currentActor("admin");
    const parsed = ZCreatePlan.parse(inputObject(input));
    const planId = await auditedPlanCreation(getDb(), actor, parsed);
    revalidatePath("/catalog", "layout");
    return { ok: true, planId };
  } catch (error) {
    return actionFailure(error, "create plan");
  }
}
