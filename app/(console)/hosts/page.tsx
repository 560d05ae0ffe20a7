import type { Metadata } from "next";
import { HostsView } from "@/components/hosts-view";
import { getDb } from "@/lib/db/client";
import { listHosts } from "@/lib/hosts/list-hosts";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Hosts" };

export default async function HostsPage() {
  const hosts = await listHosts(getDb());
  return <HostsView initialHosts={hosts} />;
}
