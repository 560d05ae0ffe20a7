import { desc, eq, max } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { events, plans, planVersions } from "@/lib/db/schema";
import { AppError, isUniqueViolation } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import type { TCreatePlan, TCreatePlanVersion } from "./schemas";

export async function createPlan(db: Database, input: TCreatePlan, actor: string): Promise<string> {
  const taken = () =>
    new AppError("conflict", `A plan ${input.slug} exists already.`, {
      slug: ["Taken; choose another."],
    });
  return db.transaction(async (tx) => {
    const [existing] = await tx
      .select({ id: plans.id })
      .from(plans)
      .where(eq(plans.slug, input.slug));
    if (existing) throw taken();
    const [plan] = await tx
      .insert(plans)
      .values(input)
      .returning({ id: plans.id })
      .catch((error: unknown) => {
        // A concurrent request took the slug between the check and the insert.
        throw isUniqueViolation(error) ? taken() : error;
      });
    await tx
      .insert(events)
      .values({ kind: "catalog.plan_created", actor, message: `plan ${input.slug} created` });
    await notifyLive(tx, { type: "list", list: "catalog" });
    return plan!.id;
  });
}

/** A new version is a draft until published; its number follows the plan's last one. */
export async function createPlanVersion(
  db: Database,
  input: TCreatePlanVersion,
  actor: string,
): Promise<string> {
  return db.transaction(async (tx) => {
    const [plan] = await tx.select().from(plans).where(eq(plans.id, input.planId)).for("update");
    if (!plan)
      throw new AppError("not_found", "That plan does not exist.", {
        planId: ["Choose an existing plan."],
      });
    const [last] = await tx
      .select({ version: max(planVersions.version) })
      .from(planVersions)
      .where(eq(planVersions.planId, plan.id));
    const version = (last?.version ?? 0) + 1;
    const [row] = await tx
      .insert(planVersions)
      .values({
        ...input,
        version,
        saleStartsAt: input.saleStartsAt ?? null,
        saleEndsAt: input.saleEndsAt ?? null,
      })
      .returning({ id: planVersions.id });
    await tx.insert(events).values({
      kind: "catalog.version_created",
      actor,
      message: `${plan.slug} v${version} drafted (template VMID ${input.templateVmid})`,
    });
    await notifyLive(tx, { type: "list", list: "catalog" });
    return row!.id;
  });
}

/** Publishing makes the version's template required on every host (requiredTemplateVmids). */
export async function publishPlanVersion(
  db: Database,
  planVersionId: string,
  actor: string,
): Promise<void> {
  await db.transaction(async (tx) => {
    const [version] = await tx
      .select()
      .from(planVersions)
      .where(eq(planVersions.id, planVersionId))
      .for("update");
    if (!version) throw new AppError("not_found", "That plan version does not exist.");
    const [plan] = await tx
      .select({ slug: plans.slug })
      .from(plans)
      .where(eq(plans.id, version.planId));
    if (version.publishedAt)
      throw new AppError("conflict", "That plan version is published already.");
    await tx
      .update(planVersions)
      .set({ publishedAt: new Date() })
      .where(eq(planVersions.id, version.id));
    await tx.insert(events).values({
      kind: "catalog.version_published",
      actor,
      message: `${plan?.slug ?? "plan"} v${version.version} published; template VMID ${version.templateVmid} is now required on every host`,
    });
    await notifyLive(tx, { type: "list", list: "catalog" });
  });
}

export async function listCatalog(db: Database) {
  const [planRows, versionRows] = await Promise.all([
    db.select().from(plans).orderBy(plans.slug),
    db.select().from(planVersions).orderBy(desc(planVersions.version)),
  ]);
  return planRows.map((plan) => ({
    ...plan,
    createdAt: plan.createdAt.toISOString(),
    versions: versionRows
      .filter((v) => v.planId === plan.id)
      .map((v) => ({
        id: v.id,
        version: v.version,
        templateVmid: v.templateVmid,
        cores: v.cores,
        memoryMib: v.memoryMib,
        diskGib: v.diskGib,
        publishedAt: v.publishedAt?.toISOString() ?? null,
        saleStartsAt: v.saleStartsAt?.toISOString() ?? null,
        saleEndsAt: v.saleEndsAt?.toISOString() ?? null,
      })),
  }));
}
export type CatalogView = Awaited<ReturnType<typeof listCatalog>>;
