import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { auditedPlanCreation } from "@/lib/catalog/audited-catalog-changes";
import { ZCreatePlan } from "@/lib/catalog/schemas";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/** Adds a plan: 201 `{ planId }`; 409 with a `slug` field error when the slug is taken. */
export const POST = route(
  "POST /api/catalog/plans",
  {
    role: "admin",
    summary: "Add a plan",
    body: { schema: ZCreatePlan, read: "json" },
    errorKeys: "field",
  },
  async ({ actor, body }) => json({ planId: await auditedPlanCreation(getDb(), actor, body) }, 201),
);
