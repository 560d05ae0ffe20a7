import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { cache } from "react";
import { requirePageActor } from "@/lib/auth/actor";
import { HostDetailView } from "@/components/host-detail";
import { getDb } from "@/lib/db/client";
import { getHost } from "@/lib/hosts/get-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";

type Props = { params: Promise<{ hostId: string }> };

// Metadata and page read the same host once per request.
const loadHost = cache(async (hostId: string) => {
  // A malformed id names no host: 404, before Postgres can reject the uuid cast with a 500.
  const id = ZHostId.safeParse(hostId);
  if (!id.success) return null;
  return getHost(getDb(), id.data);
});

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const { hostId } = await params;
  // Metadata renders on its own: without the check a host's name could reach a stranger's tab.
  await requirePageActor("viewer", `/hosts/${hostId}`);
  const host = await loadHost(hostId);
  return { title: host ? host.name : "Host not found" };
}

export default async function HostPage({ params }: Props) {
  const { hostId } = await params;
  await requirePageActor("viewer", `/hosts/${hostId}`);
  const host = await loadHost(hostId);
  if (!host) notFound();
  return <HostDetailView initialHost={host} />;
}
