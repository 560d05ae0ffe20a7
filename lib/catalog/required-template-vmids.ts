import { and, isNotNull, lte } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { planVersions } from "@/lib/db/schema";

export type RequiredTemplates = {
  /** False when nothing was ever published: a fresh installation may onboard before it sells. */
  catalogPublished: boolean;
  /** Distinct template VMIDs of published versions whose sale window has not ended, ascending. */
  vmids: number[];
};

type VersionWindow = { templateVmid: number; publishedAt: Date | null; saleEndsAt: Date | null };

/**
 * THE window logic: BuildVmTemplate, VerifyVmTemplate and the pre-sale VmTemplateCheck all call
 * this; nobody copies it. A version whose sale has not started yet still requires its template
 * (hosts must carry it before the first sale).
 */
export function requiredFromVersions(
  versions: readonly VersionWindow[],
  now: Date,
): RequiredTemplates {
  const published = versions.filter((v) => v.publishedAt !== null && v.publishedAt <= now);
  const vmids = new Set(
    published.filter((v) => v.saleEndsAt === null || v.saleEndsAt > now).map((v) => v.templateVmid),
  );
  return { catalogPublished: published.length > 0, vmids: [...vmids].sort((a, b) => a - b) };
}

export async function requiredTemplateVmids(
  db: Database,
  now: Date = new Date(),
): Promise<RequiredTemplates> {
  const versions = await db
    .select({
      templateVmid: planVersions.templateVmid,
      publishedAt: planVersions.publishedAt,
      saleEndsAt: planVersions.saleEndsAt,
    })
    .from(planVersions)
    // A pre-filter only; the decision is requiredFromVersions's.
    .where(and(isNotNull(planVersions.publishedAt), lte(planVersions.publishedAt, now)));
  return requiredFromVersions(versions, now);
}
