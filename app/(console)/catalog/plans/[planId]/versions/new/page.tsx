import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { requirePageActor } from "@/lib/auth/actor";
import { CatalogVersionForm } from "@/components/catalog-version-form";
import { listCatalog } from "@/lib/catalog/manage-catalog";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "New plan version" };

export default async function NewPlanVersionPage({
  params,
}: {
  params: Promise<{ planId: string }>;
}) {
  const { planId } = await params;
  await requirePageActor("admin", `/catalog/plans/${planId}/versions/new`);
  const plan = (await listCatalog(getDb())).find((candidate) => candidate.id === planId);
  if (!plan) notFound();
  const latest = plan.versions[0];

  return (
    <>
      <p className="breadcrumb">
        <Link href="/catalog">← Catalog</Link>
      </p>
      <h1>
        New version of {plan.name} <span className="mono muted catalog-slug">{plan.slug}</span>
      </h1>
      <p className="lead">
        It is saved as a draft and requires nothing of any host until you publish it from the
        catalog.
        {latest &&
          ` The size below is v${latest.version}'s (template VMID ${latest.templateVmid}).`}
      </p>
      <CatalogVersionForm
        plan={{ id: plan.id, slug: plan.slug }}
        defaults={
          latest
            ? { cores: latest.cores, memoryMib: latest.memoryMib, diskGib: latest.diskGib }
            : undefined
        }
      />
    </>
  );
}
