import type { Metadata } from "next";
import Link from "next/link";
import { DrillControl } from "@/components/power/drill-control";
import { PowerRunList } from "@/components/power/timeline-runs";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/auth/roles";
import { getDb } from "@/lib/db/client";
import { getPowerOverview } from "@/lib/power/queries/power-overview";
import { listPowerRuns } from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Power runs and drills" };

/** Every power run, drills and real outages, each with its timeline; admins start drills here. */
export default async function PowerRunsPage() {
  const actor = await requirePageActor("viewer", "/power/runs");
  const db = getDb();
  const [runs, overview] = await Promise.all([listPowerRuns(db), getPowerOverview(db)]);
  return (
    <>
      <p className="muted small">
        <Link href="/power">Power</Link> / Runs and drills
      </p>
      <div className="page-head">
        <h1>Runs and drills</h1>
        {hasRole(actor.role, "admin") && (
          <DrillControl ups={overview.ups.map(({ id, name }) => ({ id, name }))} />
        )}
      </div>
      <p className="lead">
        Every shutdown run — a drill or a real outage — with the timeline of what it did. A drill
        rehearses one UPS&apos;s outage: in dry-run it plans the whole sequence and records every
        action as &quot;would do&quot;, and nothing is sent.
      </p>
      <section className="panel" aria-labelledby="runs-heading">
        <h2 id="runs-heading">Runs</h2>
        <PowerRunList initial={runs} />
      </section>
    </>
  );
}
