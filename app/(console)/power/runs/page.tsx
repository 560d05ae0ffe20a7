import type { Metadata } from "next";
import { z } from "zod";
import { DrillControl } from "@/components/power/drill-control";
import { DrillWayBackButton } from "@/components/power/drill-way-back-button";
import { RunTimelineView } from "@/components/power/timeline";
import { PowerRunList } from "@/components/power/timeline-runs";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/roles";
import { getDb } from "@/lib/db/client";
import { getPowerOverview } from "@/lib/power/queries/power-overview";
import { listPowerRuns, runTimeline } from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Power runs and drills" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * Every power run — drills, real outages and the ways back after them; `?run=<id>` shows that run's timeline above the list
 * (live while it runs, kept afterwards). Admins start drills here.
 */
export default async function PowerRunsPage({ searchParams }: { searchParams: SearchParams }) {
  const actor = await requirePageActor("viewer", "/power/runs");
  const requested = (await searchParams).run;
  const runId = z.uuid().safeParse(Array.isArray(requested) ? requested.at(-1) : requested);
  const db = getDb();
  const [runs, overview, timeline] = await Promise.all([
    listPowerRuns(db),
    getPowerOverview(db),
    runId.success ? runTimeline(db, runId.data) : null,
  ]);
  return (
    <>
      <div className="page-head">
        <h1>Runs and drills</h1>
        {hasRole(actor.role, "admin") && (
          <DrillControl ups={overview.ups.map(({ id, name }) => ({ id, name }))} />
        )}
      </div>
      <p className="lead">
        Every shutdown run — a drill or a real outage — and every way back after one, with the
        timeline of what it did. A drill rehearses one UPS&apos;s outage: in dry-run it plans the
        whole sequence and records every action as &quot;would do&quot;, and nothing is sent.
      </p>
      {requested !== undefined && (
        <section className="panel" aria-labelledby="timeline-heading">
          <h2 id="timeline-heading">Timeline</h2>
          {timeline ? (
            <>
              {timeline.run.origin.kind === "drill" && hasRole(actor.role, "admin") && (
                <div>
                  <DrillWayBackButton drillRunId={timeline.run.id} />
                </div>
              )}
              <RunTimelineView key={timeline.run.id} initial={timeline} />
            </>
          ) : (
            <p role="alert" data-testid="run-timeline-missing">
              No power run has this id. Choose one from the list below.
            </p>
          )}
        </section>
      )}
      <section className="panel" aria-labelledby="runs-heading">
        <h2 id="runs-heading">Runs</h2>
        <PowerRunList initial={runs} />
      </section>
    </>
  );
}
