"use server";

import { auditedPlanVersionCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlanVersion } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";
import { formAction } from "./action";
import type { ActionResult } from "./action-result";

export type CreatePlanVersionResult = ActionResult<{ planVersionId: string }>;

/** Drafts the plan's next version. A draft requires nothing of any host until it is published. */
export const createPlanVersionAction = formAction(
  {
    name: "create plan version",
    role: "admin",
    schema: ZCreatePlanVersion,
    revalidate: [["/catalog", "layout"]],
  },
  async ({ actor, input }) => ({
    planVersionId: await auditedPlanVersionCreation(getDb(), actor, input),
  }),
);
