import type { Metadata } from "next";

import { ConsoleKeyPanel, type ConsoleKeyOverviewJson } from "@/components/console-key-panel";
import { requirePageActor } from "@/lib/auth/actor";
import { consoleKeyOverview } from "@/lib/console-key/overview";
import { getDb } from "@/lib/db/client";

export const metadata: Metadata = { title: "Console SSH key" };

export default async function ConsoleKeyPage() {
  await requirePageActor("viewer", "/settings/ssh-key");
  const overview = await consoleKeyOverview(getDb());
  // What the API answers: dates as ISO strings, so the live refetches have the same shape.
  const initial = JSON.parse(JSON.stringify(overview)) as ConsoleKeyOverviewJson;
  return (
    <>
      <h1>Console SSH key</h1>
      <p className="lead">
        The console&apos;s own Ed25519 key. Hosts set to &ldquo;Use the console&apos;s key&rdquo;
        trust it in <span className="mono">~/.ssh/authorized_keys</span>; the private key is stored
        encrypted and never leaves the server.
      </p>
      <ConsoleKeyPanel initial={initial} />
    </>
  );
}
