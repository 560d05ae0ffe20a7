import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { createPlan, createPlanVersion, publishPlanVersion } from "./manage-catalog";
import type { TCreatePlan, TCreatePlanVersion } from "./schemas";

/**
 * The catalog changes under their audit log entries, shared by the server actions and the JSON
 * API (`/api/catalog/…`), so both doors leave the same entry for the same change.
 */

/** createPlan as `catalog.plan_create`, named by the new plan's id, with its slug. */
export async function auditedPlanCreation(
  db: Database,
  actor: AuditActor,
  input: TCreatePlan,
): Promise<string> {
  return audited(
    db,
    {
      actor,
      action: "catalog.plan_create",
      target: (id) => `plan:${id}`,
      detail: { slug: input.slug },
    },
    () => createPlan(db, input, actor.name),
  );
}

/** createPlanVersion as `catalog.version_create`, named by the new version's id, with its plan. */
export async function auditedPlanVersionCreation(
  db: Database,
  actor: AuditActor,
  input: TCreatePlanVersion,
): Promise<string> {
  return audited(
    db,
    {
      actor,
      action: "catalog.version_create",
      target: (id) => `plan_version:${id}`,
      detail: { planId: input.planId },
    },
    () => createPlanVersion(db, input, actor.name),
  );
}

/** publishPlanVersion as `catalog.version_publish`. */
export async function auditedPlanVersionPublication(
  db: Database,
  actor: AuditActor,
  planVersionId: string,
): Promise<void> {
  await audited(
    db,
    { actor, action: "catalog.version_publish", target: `plan_version:${planVersionId}` },
    () => publishPlanVersion(db, planVersionId, actor.name),
  );
}
