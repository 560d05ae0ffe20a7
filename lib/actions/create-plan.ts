"use server";

import { auditedPlanCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CreatePlanResult = ActionResult<{ planId: string }>;

/** Adds a plan (what is sold); it sells nothing until one of its versions is published. */
export const createPlanAction = formAction(
  {
    name: "create plan",
    role: "admin",
    schema: ZCreatePlan,
    revalidate: [["/catalog", "layout"]],
  },
  async ({ actor, input }) => ({ planId: await auditedPlanCreation(getDb(), actor, input) }),
);
