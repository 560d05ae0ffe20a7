"use client";

import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useId, useState, useTransition } from "react";
import { startDrillAction } from "@/lib/actions/power/start-drill";
import type { DrillPlan } from "@/lib/power/drill/drill-plan";
import { formatDuration } from "@/lib/logs/text";
import { ConfirmDialog } from "../confirm-dialog";
import { fetchJson } from "../queries";
import styles from "./timeline.module.css";

type Ups = { id: string; name: string };

/**
 * Starts a drill behind a confirmation that says exactly what will happen. Dry-run (the
 * default): the whole sequence of the chosen UPS's outage runs, every action is recorded as
 * "would do", nothing is sent — whatever the console's mode. Live (only while armed): the
 * dialog names every target that really shuts down, with its request, and exactly that list
 * is confirmed. Once started, the run's timeline opens and draws itself live.
 */
export function DrillControl({ ups }: { ups: Ups[] }) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [upsId, setUpsId] = useState(ups[0]?.id ?? "");
  const [live, setLive] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const selectId = useId();
  const plan = useQuery({
    queryKey: ["power", "drill-plan", upsId],
    queryFn: () => fetchJson<DrillPlan>(`/api/power/drills?upsId=${encodeURIComponent(upsId)}`),
    enabled: open && upsId !== "",
  });
  if (ups.length === 0) return null;
  const drill = plan.data;
  const armed = drill?.consoleMode === "armed";
  const liveChosen = live && armed;

  const start = () =>
    startTransition(async () => {
      if (!drill) return;
      setError(null);
      const result = await startDrillAction(
        liveChosen
          ? { upsId, live: true, confirmedTargetIds: drill.targets.map((t) => t.id) }
          : { upsId, live: false },
      );
      if (!result.ok) {
        setError(result.message);
        await plan.refetch();
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
        data-testid="drill-button"
      >
        Start a drill…
      </button>
      <ConfirmDialog
        open={open}
        title="Start a drill"
        confirmLabel={
          liveChosen
            ? `Live drill: shut ${drill!.targets.length === 1 ? "this target" : `these ${drill!.targets.length} targets`} down for real`
            : "Start the drill (dry-run: nothing is sent)"
        }
        pending={pending || !drill || drill.targets.length === 0}
        error={error}
        onConfirm={start}
        onCancel={() => setOpen(false)}
        testId="drill-dialog"
      >
        <p>
          <label htmlFor={selectId}>Rehearse the outage of </label>
          <select
            id={selectId}
            value={upsId}
            onChange={(event) => setUpsId(event.target.value)}
            data-testid="drill-ups"
          >
            {ups.map((u) => (
              <option key={u.id} value={u.id}>
                {u.name}
              </option>
            ))}
          </select>
        </p>
        <fieldset>
          <legend>How</legend>
          <label className={styles.choice}>
            <input
              type="radio"
              name="drill-mode"
              checked={!liveChosen}
              onChange={() => setLive(false)}
              data-testid="drill-dry-run"
            />
            <span>
              <strong>Dry-run</strong>: the whole sequence is planned and run, every action is
              recorded as &quot;would do&quot; — <strong>nothing is sent</strong> to any host, even
              while the console is armed.
            </span>
          </label>
          <label className={styles.choice}>
            <input
              type="radio"
              name="drill-mode"
              checked={liveChosen}
              disabled={!armed}
              onChange={() => setLive(true)}
              data-testid="drill-live"
            />
            <span>
              <strong>Live drill</strong>: the calls really go out and the targets below{" "}
              <strong>really power off</strong>.{" "}
              {armed
                ? "Only for machines that may go down now (a lab, a maintenance window): the console cannot tell a lab from production."
                : "Only while the console is armed: arm first."}
            </span>
          </label>
        </fieldset>
        {plan.isError ? (
          <p role="alert">{plan.error.message}</p>
        ) : !drill ? (
          <p className="muted">Reading the plan…</p>
        ) : drill.targets.length === 0 ? (
          <p data-testid="drill-targets-none">
            An outage of {drill.ups.name} shuts nothing down (no enabled target it alone brings
            down): there is nothing to drill. Protect targets on the Targets page first.
          </p>
        ) : (
          <>
            {liveChosen && (
              <p className={styles.liveDrillWarning} role="alert" data-testid="drill-live-warning">
                These {drill.targets.length} machine(s) will <strong>really shut down</strong>, in
                this order, and stay off until someone powers them on:
              </p>
            )}
            <p>
              {liveChosen ? "Sent for real" : "Planned, and recorded as would-do"} (budget{" "}
              {formatDuration(drill.budgetSeconds * 1000)}):
            </p>
            <ol data-testid="drill-targets">
              {drill.targets.map((target) => (
                <li key={target.id} data-testid={`drill-target-${target.name}`}>
                  <strong>{target.name}</strong>{" "}
                  <span className="small">
                    ({target.kind === "pbs" ? "backup server" : "PVE node"}, stage {target.stage}
                    {target.runsConsole && ", runs the console: last"})
                  </span>
                  <div className={styles.request}>
                    {target.request ?? `cannot be reached: ${target.problem}`}
                  </div>
                </li>
              ))}
            </ol>
            <p className="muted small">
              The drill is kept with its timeline under Runs and drills, beside real outages.
            </p>
          </>
        )}
      </ConfirmDialog>
    </>
  );
}
