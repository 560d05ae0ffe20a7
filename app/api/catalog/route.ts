import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { listCatalog } from "@/lib/catalog/manage-catalog";
import { requiredTemplateVmids } from "@/lib/catalog/required-template-vmids";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every plan with its versions, and what the catalog requires of hosts right now:
 * `{ plans, requiredTemplateVmids: { catalogPublished, vmids } }`.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, "viewer");
    const db = getDb();
    const [plans, required] = await Promise.all([listCatalog(db), requiredTemplateVmids(db)]);
    return json({ plans, requiredTemplateVmids: required });
  } catch (error) {
    return respondError(error, "GET /api/catalog");
  }
}
