import type { Metadata } from "next";
import { requirePageActor } from "@/lib/auth/actor";
import { HostsView } from "@/components/hosts-view";
import { getDb } from "@/lib/db/client";
import { listHosts } from "@/lib/hosts/list-hosts";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Hosts" };

export default async function HostsPage() {
  await requirePageActor("viewer", "/hosts");
  const hosts = await listHosts(getDb());
  return <HostsView initialHosts={hosts} />;
}
