"use client";

import { useQuery } from "@tanstack/react-query";
import type { PreviewGroup } from "@/lib/power/shutdown-pipeline/plan-preview";
import type { PowerPlanPage } from "@/lib/power/queries/power-plan";
import type { WayBackPreview } from "@/lib/power/queries/way-back-preview";
import Link from "next/link";
import { BackPlanList } from "./back-plan-list";
import { IfCan } from "../actor-context";
import { formatDateTime, formatElapsed, keepDurationsWhole } from "../format";
import { ClusterSequencePreview } from "./cluster-sequence-preview";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { ArmControl } from "./arm-control";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

export function usePowerPlan(initial: PowerPlanPage) {
  const refetchInterval = useFallbackRefetchInterval();
  return useQuery({
    queryKey: powerKeys.plan,
    queryFn: () => fetchJson<PowerPlanPage>("/api/power/plan"),
    initialData: initial,
    refetchInterval,
  });
}

const VERDICT_CLASS = {
  ok: "verdict-ok",
  short: "verdict-short",
  unknown: "verdict-unknown",
  nothing: "verdict-unknown",
} as const;

/** Arm… or Disarm… for admins, on the current plan (the power page's one action). */
export function PlanArmControl({ initial }: { initial: PowerPlanPage }) {
  const { data: plan } = usePowerPlan(initial);
  return (
    <IfCan role="admin">
      <ArmControl plan={plan} />
    </IfCan>
  );
}

/**
 * The exact sequence the console would run right now, per UPS: if that UPS's trigger fired now,
 * which targets go down in which order, with which request and deadline, and whether the total
 * time budget fits in the runtime the UPS reports. Admins arm and disarm at the top of the page.
 */
export function PlanPreviewPanel({ initial }: { initial: PowerPlanPage }) {
  const { data: plan } = usePowerPlan(initial);
  const changed = plan.changedSinceArmed;
  const drift =
    changed && changed.added.length + changed.removed.length + changed.changed.length > 0;
  return (
    <section className="panel" aria-labelledby="plan-heading" id="plan" data-testid="power-plan">
      <h2 id="plan-heading">Shutdown plan</h2>
      <p className="muted">
        {plan.mode === "armed"
          ? "Armed: when a UPS trigger fires, these calls are sent for real."
          : "Dry-run: when a UPS trigger fires, the console runs this sequence and logs each call as 'would POST …'; nothing is sent."}{" "}
        Each call has a {plan.callTimeoutSeconds} s deadline; a target then gets{" "}
        {plan.targetDownSeconds} s to go down. Within a group the calls go out together.
      </p>
      {changed && drift && (
        <div className="notice notice-warning" role="status" data-testid="plan-changed-since-armed">
          <p>
            The plan changed since it was armed
            {plan.armedBy && ` by ${plan.armedBy}`}
            {plan.armedAt && (
              <>
                {" on "}
                <time dateTime={plan.armedAt} suppressHydrationWarning>
                  {formatDateTime(plan.armedAt)}
                </time>
              </>
            )}
            . A shutdown runs the plan shown here.
          </p>
          <ul className={styles.diff}>
            {changed.added.map((name) => (
              <li key={`+${name}`}>added: {name}</li>
            ))}
            {changed.removed.map((name) => (
              <li key={`-${name}`}>removed: {name}</li>
            ))}
            {changed.changed.map((name) => (
              <li key={`~${name}`}>changed: {name}</li>
            ))}
          </ul>
        </div>
      )}
      {plan.groups.length === 0 && (
        <p className="muted" data-testid="plan-empty">
          No UPS feeds a target yet: a power failure shuts nothing down.
        </p>
      )}
      {plan.groups.map((group) => (
        <div key={group.ups.id} className={styles.planPair}>
          <PlanGroup group={group} />
          {plan.wayBack[group.ups.id] && group.verdict !== "nothing" && (
            <WayBackColumn
              ups={group.ups.name}
              wayBack={plan.wayBack[group.ups.id]!}
              dry={plan.mode !== "armed"}
            />
          )}
        </div>
      ))}
      {plan.unprotected.length > 0 && (
        <p className="notice notice-warning small" data-testid="plan-unprotected">
          Not protected:{" "}
          {plan.unprotected.map((target) => `${target.name} (${target.why})`).join(", ")}.
        </p>
      )}
    </section>
  );
}

function PlanGroup({ group }: { group: PreviewGroup }) {
  const byGroup: PreviewGroup["targets"][] = [];
  for (const target of group.targets) (byGroup[target.group] ??= []).push(target);
  const { ups } = group;
  return (
    <div className={styles.planGroup} data-testid={`plan-${ups.name}`} data-verdict={group.verdict}>
      <h3>
        If {ups.name} fired now{" "}
        <span className="muted small">
          ({ups.reachable === false ? "no reliable reading" : ""}
          {ups.reachable !== false && ups.onBattery === null && "not read yet"}
          {ups.reachable !== false &&
            ups.onBattery !== null &&
            (ups.onBattery ? "on battery" : "on mains")}
          {ups.runtimeSeconds !== null && `, runtime ${formatElapsed(ups.runtimeSeconds)}`}
          {ups.latched && ", trigger latched"})
        </span>
      </h3>
      {byGroup.length > 0 && (
        <ol>
          {byGroup.map((targets, index) => (
            <li key={index}>
              {targets.map((target) => (
                <div key={target.id} data-testid={`plan-target-${target.name}`}>
                  <strong>{target.name}</strong>{" "}
                  <span className="muted small">
                    {target.kind === "pbs" ? "backup server" : "PVE node"}, stage {target.stage}
                    {target.runsConsole && ", runs the console: last"}, deadline{" "}
                    <span className="nowrap">{target.deadlineSeconds} s</span>
                  </span>
                  <div className={styles.request}>
                    {target.request ? target.request.line : `cannot be reached: ${target.problem}`}
                  </div>
                </div>
              ))}
            </li>
          ))}
        </ol>
      )}
      {group.clusters.map((cluster) => (
        <ClusterSequencePreview key={cluster.clusterId} cluster={cluster} />
      ))}
      {group.heldBack.length > 0 && (
        <p className="muted small">
          Stays up:{" "}
          {group.heldBack
            .map((target) =>
              target.waitingFor.length > 0
                ? `${target.name} (also needs ${target.waitingFor.join(", ")} to fail)`
                : target.name,
            )
            .join("; ")}
        </p>
      )}
      {ups.outputCycle && (
        <p className="small" data-testid="plan-output-cycle">
          Then, every host on {ups.name} seen down and it still on battery: {ups.name} is asked to
          turn its output off, and on again when mains returns (output cycle on).
        </p>
      )}
      <p className={styles[VERDICT_CLASS[group.verdict]]} data-testid="plan-summary">
        {keepDurationsWhole(group.summary)}
      </p>
    </div>
  );
}

/**
 * Beside a UPS's shutdown: the way back after it, from the plan PlanPowerBack would freeze
 * (lib/power/queries/way-back-preview.ts). The guests are the ones the latest run that listed
 * those nodes recorded — a shutdown records them as it stops them — and the line says so.
 */
function WayBackColumn({
  ups,
  wayBack,
  dry,
}: {
  ups: string;
  wayBack: WayBackPreview;
  dry: boolean;
}) {
  const latest = wayBack.guestsFrom[0];
  return (
    <div className={styles.planGroup} data-testid={`way-back-${ups}`}>
      <h3>
        Then the way back <span className="muted small">(when mains return)</span>
      </h3>
      <BackPlanList plan={wayBack.plan} dry={dry} testId={`way-back-plan-${ups}`} />
      <p className="muted small" data-testid="way-back-guests-from">
        {latest ? (
          <>
            Guests as the{" "}
            <Link href={`/power/runs?run=${latest.runId}`}>latest run that listed them</Link> found
            them (
            <time dateTime={latest.recordedAt} suppressHydrationWarning>
              {formatDateTime(latest.recordedAt)}
            </time>
            ); an outage records them again as it stops them.
          </>
        ) : (
          "Which guests start again is recorded by the shutdown as it stops them: no run has listed these nodes yet — a dry-run drill lists them without sending anything."
        )}
      </p>
    </div>
  );
}
