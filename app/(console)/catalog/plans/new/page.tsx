import type { Metadata } from "next";
import Link from "next/link";
import { requirePageActor } from "@/lib/auth/actor";
import { CatalogPlanForm } from "@/components/catalog-plan-form";

export const metadata: Metadata = { title: "New plan" };

export default async function NewPlanPage() {
  await requirePageActor("admin", "/catalog/plans/new");
  return (
    <>
      <p className="breadcrumb">
        <Link href="/catalog">← Catalog</Link>
      </p>
      <h1>New plan</h1>
      <p className="lead">
        A plan is what is sold. Its sellable shape (template, size, sale window) lives in its
        versions; you add the first one next.
      </p>
      <CatalogPlanForm />
    </>
  );
}
