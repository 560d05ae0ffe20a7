import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { listCatalog } from "@/lib/catalog/manage-catalog";
import { requiredTemplateVmids } from "@/lib/catalog/required-template-vmids";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Every plan with its versions, and what the catalog requires of hosts right now:
 * `{ plans, requiredTemplateVmids: { catalogPublished, vmids } }`.
 */
export const GET = route(
  "GET /api/catalog",
  { role: "viewer", summary: "Every plan with its versions, and what hosts must have" },
  async () => {
    const db = getDb();
    const [plans, required] = await Promise.all([listCatalog(db), requiredTemplateVmids(db)]);
    return json({ plans, requiredTemplateVmids: required });
  },
);
