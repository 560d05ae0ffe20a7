"use client";

import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import { startDrillWayBackAction } from "@/lib/actions/power/start-drill-way-back";
import type { DrillWayBack } from "@/lib/power/drill/drill-way-back";
import { ConfirmDialog } from "../confirm-dialog";
import { fetchJson } from "../queries";
import { BackPlanList } from "./back-plan-list";
import styles from "./timeline.module.css";

/**
 * The way back of one drill, offered on its timeline once its shutdown has ended (admins). The
 * dialog reads what it would do now from the server — the hosts the drill took down in power-on
 * order with their controllers, the clusters, the guests that ran in start order — and says
 * exactly that. Dry-run by default; live only after a live drill while armed, and then the
 * hosts listed are the confirmation the server holds the run to.
 */
export function DrillWayBackButton({ drillRunId }: { drillRunId: string }) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [live, setLive] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const query = useQuery({
    queryKey: ["power", "drill-way-back", drillRunId],
    queryFn: () =>
      fetchJson<DrillWayBack>(`/api/power/drills/${encodeURIComponent(drillRunId)}/way-back`),
    enabled: open,
  });
  const wayBack = query.data;
  const liveChosen = live && wayBack?.live.offered === true;
  const plan = wayBack?.plan ?? null;

  const start = () =>
    startTransition(async () => {
      if (!plan) return;
      setError(null);
      const result = await startDrillWayBackAction(
        liveChosen
          ? {
              runId: drillRunId,
              live: true,
              confirmedTargetIds: plan.hosts.map((h) => h.targetId),
            }
          : { runId: drillRunId, live: false },
      );
      if (!result.ok) {
        setError(result.message);
        await query.refetch();
        return;
      }
      setOpen(false);
      router.push(`/power/runs?run=${result.runId}`);
    });

  return (
    <>
      <button
        type="button"
        className="button"
        onClick={() => {
          setError(null);
          setLive(false);
          setOpen(true);
        }}
        data-testid="drill-way-back-button"
      >
        Way back of this drill…
      </button>
      <ConfirmDialog
        open={open}
        title="The way back of this drill"
        confirmLabel={
          liveChosen
            ? `Live: power ${plan!.hosts.length === 1 ? "this host" : `these ${plan!.hosts.length} hosts`} on and start the guests`
            : "Rehearse the way back (dry-run: nothing is sent)"
        }
        pending={pending || !wayBack || wayBack.refused !== null || !plan}
        error={error}
        onConfirm={start}
        onCancel={() => setOpen(false)}
        testId="drill-way-back-dialog"
      >
        {query.isError ? (
          <p role="alert">{query.error.message}</p>
        ) : !wayBack ? (
          <p className="muted">Reading the plan…</p>
        ) : (
          <>
            {wayBack.refused && (
              <p role="alert" className="field-error" data-testid="drill-way-back-refused">
                {wayBack.refused}
              </p>
            )}
            <fieldset>
              <legend>How</legend>
              <label className={styles.choice}>
                <input
                  type="radio"
                  name="drill-way-back-mode"
                  checked={!liveChosen}
                  onChange={() => setLive(false)}
                  data-testid="drill-way-back-dry-run"
                />
                <span>
                  <strong>Dry-run</strong>: every power-on and start is recorded as &quot;would
                  …&quot; — <strong>nothing is sent</strong> to any controller or node, even while
                  armed.
                </span>
              </label>
              <label className={styles.choice}>
                <input
                  type="radio"
                  name="drill-way-back-mode"
                  checked={liveChosen}
                  disabled={!wayBack.live.offered}
                  onChange={() => setLive(true)}
                  data-testid="drill-way-back-live"
                />
                <span>
                  <strong>Live</strong>: the hosts below are <strong>really powered on</strong> by
                  their controllers and the guests the drill stopped are started again.{" "}
                  {!wayBack.live.offered && wayBack.live.why}
                </span>
              </label>
            </fieldset>
            {liveChosen && (
              <p
                className={styles.liveDrillWarning}
                role="alert"
                data-testid="drill-way-back-live-warning"
              >
                These {plan!.hosts.length} host(s) will <strong>really be powered on</strong>, in
                this order, and the guests below started:
              </p>
            )}
            {plan ? (
              <BackPlanList plan={plan} dry={!liveChosen} testId="drill-way-back-plan" />
            ) : null}
            <p className="muted small">
              A drill&apos;s way back is kept under Runs and drills, marked as a drill; it never
              counts as an outage&apos;s way back. Mains lost on a feed stops it at once.
            </p>
          </>
        )}
      </ConfirmDialog>
    </>
  );
}
