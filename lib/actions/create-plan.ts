"use server";

import { revalidatePath } from "next/cache";
import { createPlan } from "@/lib/catalog/manage-catalog";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { currentActor } from "@/lib/auth/actor";
import { audited } from "@/lib/audit/record-audit";
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
    const db = getDb();
    const planId = await audited(
      db,
      {
        actor,
        action: "catalog.plan_create",
        target: (id) => `plan:${id}`,
        detail: { slug: parsed.slug },
      },
      () => createPlan(db, parsed, actor.name),
    );
    revalidatePath("/catalog", "layout");
    return { ok: true, planId };
  } catch (error) {
    return actionFailure(error, "create plan");
  }
}
