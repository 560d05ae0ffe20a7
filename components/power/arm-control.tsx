"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import { setPowerModeAction } from "@/lib/actions/power/set-power-mode";
import type { PowerPlanPage, PowerPlanView } from "@/lib/power/queries/power-plan";
import { ConfirmDialog } from "../confirm-dialog";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

type Listed = PowerPlanView["armingTargets"];

/**
 * Arm or disarm, each behind a confirmation. Arming lists every target that would be shut down,
 * in order, with its exact request; the ids of exactly that list are sent, and a plan that
 * changed meanwhile is refused — the dialog then shows the new list to confirm again.
 */
export function ArmControl({ plan }: { plan: PowerPlanView }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const [shown, setShown] = useState<Listed | null>(null);
  const [disarming, setDisarming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const armed = plan.mode === "armed";
  // The monitor starts a real shutdown for an outage that is still latched as soon as it is
  // armed (lib/power/monitor/start-due-shutdowns.ts): the dialog must say so, not "nothing".
  const latchedNow = plan.groups.filter((group) => group.ups.latched && group.targets.length > 0);
  const cycling = plan.groups
    .filter((group) => group.ups.outputCycle)
    .map((group) => group.ups.name);

  const refresh = async () => {
    await queryClient.invalidateQueries({ queryKey: powerKeys.all });
    router.refresh();
  };

  const arm = (listed: Listed) =>
    startTransition(async () => {
      setError(null);
      const result = await setPowerModeAction({
        mode: "armed",
        confirmedTargetIds: listed.map((target) => target.id),
      });
      if (result.ok) {
        setShown(null);
        await refresh();
        return;
      }
      setError(result.message);
      // Show what the plan is now, so the admin confirms what would really happen.
      const latest = await queryClient.fetchQuery({
        queryKey: powerKeys.plan,
        queryFn: () => fetchJson<PowerPlanPage>("/api/power/plan"),
      });
      setShown(latest.armingTargets);
    });

  const disarm = () =>
    startTransition(async () => {
      setError(null);
      const result = await setPowerModeAction({ mode: "dry-run" });
      if (result.ok) {
        setDisarming(false);
        await refresh();
      } else {
        setError(result.message);
      }
    });

  return (
    <div className={styles.inlineActions}>
      {armed ? (
        <button
          type="button"
          className="button"
          onClick={() => {
            setError(null);
            setDisarming(true);
          }}
          data-testid="disarm-button"
        >
          Disarm…
        </button>
      ) : (
        <button
          type="button"
          className="button button-danger"
          onClick={() => {
            setError(null);
            setShown(plan.armingTargets);
          }}
          data-testid="arm-button"
        >
          Arm…
        </button>
      )}
      <ConfirmDialog
        open={shown !== null}
        title="Arm power protection"
        confirmLabel={
          shown && shown.length > 0
            ? `Arm: shut ${shown.length === 1 ? "this target" : `these ${shown.length} targets`} down for real`
            : "Arm with nothing to shut down"
        }
        pending={pending}
        error={error}
        onConfirm={() => shown && arm(shown)}
        onCancel={() => setShown(null)}
        testId="arm-dialog"
      >
        {latchedNow.length > 0 ? (
          <p className={styles.armNowWarning} role="alert" data-testid="arm-latched-warning">
            <strong>
              A trigger is latched now on {latchedNow.map((group) => group.ups.name).join(", ")}:
              arming starts the real shutdown of the targets it feeds at once
            </strong>{" "}
            (the outage was only logged while in dry-run; armed, the console acts on it). Release
            the latch first if power is back and stable.
          </p>
        ) : null}
        <p>
          {latchedNow.length > 0 ? "Otherwise nothing" : "Nothing"} is sent now. From the moment you
          arm, when a UPS trigger fires the console sends these shutdown calls{" "}
          <strong>for real</strong>, group by group in this order, each with a{" "}
          {plan.callTimeoutSeconds} s deadline; the host that runs the console goes last. Guests are
          shut down by each node&apos;s own shutdown.
        </p>
        {plan.shed.enabled ? (
          <p data-testid="arm-shed">
            <strong>Early shedding is on:</strong> after {plan.shed.afterMinutes} min on battery,
            before any trigger fires, the running guests tagged <code>{plan.shed.tag}</code>
            {plan.shed.listed > 0 ? ` and the ${plan.shed.listed} listed in the settings` : ""} are
            shut down for real (HA-managed guests are left running), and started again if mains
            returns first.
          </p>
        ) : null}
        {cycling.length > 0 ? (
          <p data-testid="arm-output-cycle">
            <strong>UPS output cycle is on for {cycling.join(", ")}:</strong> once every host such a
            UPS feeds is seen down and it is still on battery, the console asks it to turn its
            output off, and on again when mains returns — whatever else is plugged into it loses
            power then.
          </p>
        ) : null}
        {shown && shown.length > 0 ? (
          <ol className={styles.targetList} data-testid="arm-targets">
            {shown.map((target) => (
              <li key={target.id} data-testid={`arm-target-${target.name}`}>
                <strong>{target.name}</strong>{" "}
                <span className="small">
                  ({target.kind === "pbs" ? "backup server" : "PVE node"}, stage {target.stage}
                  {target.runsConsole && ", runs the console: last"}; goes down when{" "}
                  {target.feedPolicy === "all" ? "all" : "any"} of {target.feeds.join(", ")}{" "}
                  {target.feedPolicy === "all" ? "fail" : "fails"})
                </span>
                <div className={styles.request}>{target.request}</div>
              </li>
            ))}
          </ol>
        ) : (
          <p data-testid="arm-targets-none">
            No target is protected yet: armed, the console would still send nothing until targets
            are added.
          </p>
        )}
      </ConfirmDialog>
      <ConfirmDialog
        open={disarming}
        title="Disarm power protection"
        confirmLabel="Disarm: back to dry-run"
        pending={pending}
        error={error}
        onConfirm={disarm}
        onCancel={() => setDisarming(false)}
        testId="disarm-dialog"
      >
        <p>
          Back to dry-run: from now on nothing is sent; triggers only log what they would shut down.
          A shutdown run in progress sends no further calls. Calls already sent cannot be taken
          back.
        </p>
      </ConfirmDialog>
    </div>
  );
}
