import type { Metadata } from "next";
import { FailingNotificationsBanner } from "@/components/notify/failing-notifications-banner";
import { PowerEventLog, type EventFilterValues } from "@/components/power/event-log";
import { PlanArmControl, PlanPreviewPanel } from "@/components/power/plan-preview";
import { PowerBackRunPanel } from "@/components/power/power-back-run-panel";
import { ShedPanel } from "@/components/power/shed-panel";
import { ProtectionTable } from "@/components/power/protection-table";
import { RestoreClusters } from "@/components/power/restore-clusters";
import { ReadingsCharts } from "@/components/power/readings-chart";
import { SelfTestCard } from "@/components/power/self-test-card";
import { ShutdownRunPanel } from "@/components/power/shutdown-run-panel";
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
import { readPowerPlanPage } from "@/lib/power/queries/power-plan";
import { powerBackPageView } from "@/lib/power/queries/power-back-run";
import { shedPageView } from "@/lib/power/queries/shed-view";
import { latestShutdownRun } from "@/lib/power/queries/shutdown-run";
import { listTargetProtection } from "@/lib/power/queries/target-protection";
import { readSelfTestOverview } from "@/lib/power/self-test/latest-self-test";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Power" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/**
 * The power dashboard, for an operator woken at 3 a.m. The first screen: the mode (the banner) and
 * the one action (Arm… / Disarm…), a card per UPS with its state, time left and what will happen
 * when, the latest shutdown run in one line and, while one runs or after one answered the latest
 * outage, the way back beside it. Below: the charts, the plan in full, who is
 * protected and how, the self-test and the event log. Everything follows the live stream.
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
  const [
    overview,
    plan,
    targets,
    shutdown,
    powerBack,
    events,
    selfTest,
    failingNotifications,
    shed,
  ] = await Promise.all([
    getPowerOverview(db),
    readPowerPlanPage(db),
    listTargetProtection(db),
    latestShutdownRun(db),
    powerBackPageView(db),
    filter.success ? listPowerEvents(db, filter.data) : null,
    readSelfTestOverview(db),
    failingDeliveriesSummary(db),
    shedPageView(db),
  ]);
  const ups = overview.ups.map(({ id, name }) => ({ id, name }));
  const clusters = hasRole(actor.role, "admin") ? await loadClusterGroups(db) : [];

  return (
    <>
      <div className="page-head">
        <h1>Power</h1>
        <PlanArmControl initial={plan} />
      </div>
      <FailingNotificationsBanner initial={failingNotifications} />
      <UpsCards initial={overview} initialPlan={plan} />
      <div className="power-runs-pair">
        <ShutdownRunPanel initial={shutdown} />
        <PowerBackRunPanel initial={powerBack} />
      </div>
      <h2 className="section-break">Details</h2>
      <p className="muted small">
        The charts, the plan in full, who is protected, the self-test and the event log. Times on
        battery are measured by the console&apos;s own clock.
      </p>
      <ReadingsCharts ups={ups} />
      <PlanPreviewPanel initial={plan} />
      <ShedPanel initial={shed} />
      <RestoreClusters
        clusters={clusters}
        admin={hasRole(actor.role, "admin")}
        powerBack={powerBack}
      />
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
