import type { Metadata } from "next";
import Link from "next/link";
import { requirePageActor } from "@/lib/auth/actor";
import { HostForm } from "@/components/host-form";
import { installKeyCommand } from "@/lib/console-key/commands";
import { ensureConsoleKey } from "@/lib/host-access/console-key-store";
import { getDb } from "@/lib/db/client";
import { activeHosts } from "@/lib/hosts/active-hosts";

export const metadata: Metadata = { title: "Add host" };

export default async function NewHostPage() {
  await requirePageActor("operator", "/hosts/new");
  const key = await ensureConsoleKey(getDb());
  const members = (await activeHosts(getDb()))
    .map((h) => ({ id: h.id, name: h.name, clusterName: h.clusterName }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return (
    <>
      <p className="breadcrumb">
        <Link href="/hosts">← Hosts</Link>
      </p>
      <h1>Add host</h1>
      <p className="lead">
        A fresh Debian 13 (trixie) machine, reachable over SSH. Onboarding starts as soon as you add
        it; on first contact the console pins the host&apos;s SSH key.
      </p>
      <HostForm
        clusterMembers={members}
        consoleKey={{
          id: key.id,
          publicKey: key.publicKey,
          fingerprint: key.fingerprint,
          installCommand: installKeyCommand(key.publicKey),
        }}
      />
    </>
  );
}
