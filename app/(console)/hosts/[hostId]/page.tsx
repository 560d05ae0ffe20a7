import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { cache } from "react";
import { requirePageActor } from "@/lib/auth/actor";
import { HostDetailView } from "@/components/host-detail";
import { getDb } from "@/lib/db/client";
import { getHost } from "@/lib/hosts/get-host";
import { getPowerControllerView } from "@/lib/power-controllers/store";
import { clusterNameOfHost } from "@/lib/power-controllers/cluster-members";
import { hasRole } from "@/lib/roles";
import { installKeyCommand } from "@/lib/console-key/commands";
import { ensureConsoleKey } from "@/lib/host-access/console-key-store";
import { ZHostId, ZRunId } from "@/lib/hosts/schemas";
import { getRun } from "@/lib/runs/get-run";
import { pipelines } from "@/lib/registry/pipelines";

export const dynamic = "force-dynamic";

type Props = {
  params: Promise<{ hostId: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
};

// Metadata and page read the same host once per request.
const loadHost = cache(async (hostId: string) => {
  // A malformed id names no host: 404, before Postgres can reject the uuid cast with a 500.
  const id = ZHostId.safeParse(hostId);
  if (!id.success) return null;
  return getHost(getDb(), id.data, pipelines);
});

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const { hostId } = await params;
  // Metadata renders on its own: without the check a host's name could reach a stranger's tab.
  await requirePageActor("viewer", `/hosts/${hostId}`);
  const host = await loadHost(hostId);
  return { title: host ? host.name : "Host not found" };
}

export default async function HostPage({ params, searchParams }: Props) {
  const { hostId } = await params;
  const actor = await requirePageActor("viewer", `/hosts/${hostId}`);
  const host = await loadHost(hostId);
  if (!host) notFound();
  // The edit form's "the console's key" option needs its install command; only editors see it.
  const key = hasRole(actor.role, "operator") ? await ensureConsoleKey(getDb()) : null;
  // `?run=<id>`: an earlier run of this host (a malformed or foreign id shows the latest).
  const requested = ZRunId.safeParse((await searchParams).run);
  const earlier =
    requested.success && requested.data !== host.latestRun?.id
      ? await getRun(getDb(), requested.data, pipelines)
      : null;
  const viewedRun = earlier?.hostId === host.id ? earlier : null;
  const powerController = await getPowerControllerView(getDb(), host.id);
  return (
    <HostDetailView
      initialHost={host}
      viewedRun={viewedRun}
      powerController={powerController}
      clusterName={await clusterNameOfHost(getDb(), host.id)}
      consoleKey={
        key && {
          id: key.id,
          publicKey: key.publicKey,
          fingerprint: key.fingerprint,
          installCommand: installKeyCommand(key.publicKey),
        }
      }
    />
  );
}
