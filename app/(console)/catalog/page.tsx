import type { Metadata } from "next";
import Link from "next/link";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/roles";
import { CatalogPlan, CatalogRequiredTemplates } from "@/components/catalog-plans";
import type { PublishEffect } from "@/components/catalog-format";
import { listCatalog, type CatalogView } from "@/lib/catalog/manage-catalog";
import {
  requiredFromVersions,
  requiredTemplateVmids,
  type RequiredTemplates,
} from "@/lib/catalog/required-template-vmids";
import { getDb } from "@/lib/db/client";
import { ListLiveRefresh } from "@/components/list-live-refresh";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Catalog" };

export default async function CatalogPage() {
  const actor = await requirePageActor("viewer", "/catalog");
  const db = getDb();
  const now = new Date();
  const [plans, required] = await Promise.all([listCatalog(db), requiredTemplateVmids(db, now)]);
  const publishEffects = publishEffectsOf(plans, required, now);

  return (
    <>
      <ListLiveRefresh list="catalog" />
      <div className="page-head">
        <h1>Catalog</h1>
        {hasRole(actor.role, "admin") && (
          <Link href="/catalog/plans/new" className="button button-primary" data-testid="add-plan">
            New plan
          </Link>
        )}
      </div>
      <p className="lead">
        Plans are what is sold; each version names the golden template (by VMID) it is built from.
        Publishing a version makes its template required on every host until its sale window ends.
      </p>
      <CatalogRequiredTemplates required={required} plans={plans} />
      {plans.length === 0 ? (
        <div className="empty">
          <p>No plans yet.</p>
          <p>
            <Link href="/catalog/plans/new">Create the first plan</Link>, then add a version naming
            its template VMID and publish it.
          </p>
        </div>
      ) : (
        plans.map((plan) => (
          <CatalogPlan key={plan.id} plan={plan} publishEffects={publishEffects} />
        ))
      )}
    </>
  );
}

/**
 * What publishing each draft now would change. Whether its window would still require its
 * template is asked of requiredTemplateVmids's own window function, as if it were published
 * now; the window logic is not repeated here.
 */
function publishEffectsOf(
  plans: CatalogView,
  required: RequiredTemplates,
  now: Date,
): Record<string, PublishEffect> {
  const effects: Record<string, PublishEffect> = {};
  for (const version of plans.flatMap((plan) => plan.versions)) {
    if (version.publishedAt) continue;
    const asIfPublished = requiredFromVersions(
      [
        {
          templateVmid: version.templateVmid,
          publishedAt: now,
          saleEndsAt: version.saleEndsAt ? new Date(version.saleEndsAt) : null,
        },
      ],
      now,
    );
    effects[version.id] = !asIfPublished.vmids.includes(version.templateVmid)
      ? "window-ended"
      : required.vmids.includes(version.templateVmid)
        ? "already-required"
        : "requires";
  }
  return effects;
}
