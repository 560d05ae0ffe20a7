import type { Metadata } from "next";
import Link from "next/link";
import { FailingNotificationsBanner } from "@/components/notify/failing-notifications-banner";
import { DrillControl } from "@/components/power/drill-control";
import { PowerEventLog, type EventFilterValues } from "@/components/power/event-log";
import { PlanPreviewPanel } from "@/components/power/plan-preview";
import { ProtectionTable } from "@/components/power/protection-table";
import { RestoreClusters } from "@/components/power/restore-clusters";
import { ReadingsCharts } from "@/components/power/readings-chart";
import { SelfTestCard } from "@/components/power/self-test-card";
import { ShutdownRunPanel } from "@/components/power/shutdown-run-panel";
import { LatestRunTimeline } from "@/components/power/timeline-latest";
import { UpsCards } from "@/components/power/ups-cards";
import { searchParamsInput } from "@/lib/http/query-params";
import { requirePageActor } from "@/lib/auth/actor";
import { hasRole } from "@/lib/roles";
import { getDb } from "@/lib/db/client";
import { failingDeliveriesSummary } from "@/lib/notify/deliveries";
import { fieldErrors as zodFieldErrors } from "@/lib/hosts/schemas";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import { getPowerOverview } from "@/lib/power/queries/power-overview";
import {
  listPowerEvents,
  POWER_EVENT_FILTER_KEYS,
  ZPowerEventFilter,
} from "@/lib/power/queries/power-events";
import { readPowerPlan } from "@/lib/power/queries/power-plan";
import { latestShutdownRun } from "@/lib/power/queries/shutdown-run";
import { runTimeline } from "@/lib/power/queries/timeline";
import { listTargetProtection } from "@/lib/power/queries/target-protection";
import { readSelfTestOverview } from "@/lib/power/self-test/latest-self-test";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Power" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * The power dashboard, for an operator woken at 3 a.m.: the UPS cards first (what the power is
 * doing now), the shutdown run while one runs, the chart, the plan, who is protected and how,
 * and the event log. Everything follows the live stream.
 */
export default async function PowerPage({ searchParams }: { searchParams: SearchParams }) {
  const actor = await requirePageActor("viewer", "/power");
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(await searchParams)) {
    const last = Array.isArray(value) ? value.at(-1) : value;
    if (last !== undefined) params.set(key, last);
  }
  const filterInput = searchParamsInput(params, POWER_EVENT_FILTER_KEYS);
  const filter = ZPowerEventFilter.safeParse(filterInput);

  const db = getDb();
  const [overview, plan, targets, shutdown, events, selfTest, failingNotifications] =
    await Promise.all([
      getPowerOverview(db),
      readPowerPlan(db),
      listTargetProtection(db),
      latestShutdownRun(db),
      filter.success ? listPowerEvents(db, filter.data) : null,
      readSelfTestOverview(db),
      failingDeliveriesSummary(db),
    ]);
  const ups = overview.ups.map(({ id, name }) => ({ id, name }));
  const timeline = shutdown ? await runTimeline(db, shutdown.run.id) : null;
  const clusters = hasRole(actor.role, "admin") ? await loadClusterGroups(db) : [];

  return (
    <>
      <div className="page-head">
        <h1>Power</h1>
        <div style={{ display: "flex", gap: "0.5rem" }}>
          <Link href="/power/runs" className="button" data-testid="power-runs-link">
            Runs and drills
          </Link>
          <Link
            href="/power/notifications"
            className="button"
            data-testid="power-notifications-link"
          >
            Notifications
          </Link>
          {hasRole(actor.role, "admin") && (
            <>
              <DrillControl ups={ups} />
              <Link href="/power/ups" className="button" data-testid="power-configure-ups">
                UPS devices
              </Link>
              <Link href="/power/targets" className="button" data-testid="power-configure-targets">
                Targets
              </Link>
              <Link href="/power/settings" className="button" data-testid="power-configure">
                Triggers and deadlines
              </Link>
            </>
          )}
        </div>
      </div>
      <p className="lead">
        The UPS devices the console watches, what it would shut down when the power runs out, and in
        which order. Times on battery are measured by the console&apos;s own clock.
      </p>
      <FailingNotificationsBanner initial={failingNotifications} />
      <UpsCards initial={overview} />
      <ShutdownRunPanel initial={shutdown} />
      <LatestRunTimeline initialShutdown={shutdown} initialTimeline={timeline} />
      <ReadingsCharts ups={ups} />
      <PlanPreviewPanel initial={plan} />
      <RestoreClusters clusters={clusters} />
      <ProtectionTable initial={targets} />
      <SelfTestCard initial={selfTest} />
      <PowerEventLog
        initial={events}
        filter={filterInput as EventFilterValues}
        fieldErrors={filter.success ? {} : zodFieldErrors(filter.error)}
        ups={ups}
      />
    </>
  );
}
