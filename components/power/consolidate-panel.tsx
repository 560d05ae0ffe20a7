"use client";

import { LocalTime } from "../local-time";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { setClusterConsolidateAction } from "@/lib/actions/power/set-cluster-policy";
import type { ClusterGroupView } from "@/lib/power/clusters/cluster-groups-view";
import type { ConsolidateCheck } from "@/lib/power/clusters/consolidation-check";
import { describeConsolidate } from "@/lib/power/consolidate/describe";
import { useCan } from "../actor-context";
import { SubmitActions, useActionForm } from "../action-form";
import { Field, TextField } from "../form-fields";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

const VERDICT = {
  ok: { text: "✓ consolidating can work", className: styles["verdict-ok"] },
  failed: { text: "✕ consolidating cannot work", className: styles["verdict-short"] },
  "could-not-check": { text: "? could not be checked", className: styles["verdict-unknown"] },
} as const;

/**
 * The last check whether consolidating can work: the verdict, what was found, what stands in the
 * way. Anything but ✓ means the first stage does nothing and the cluster goes down as one unit
 * at the final threshold — said under the verdict.
 */
export function ConsolidateCheckView({ check }: { check: ConsolidateCheck | null }) {
  if (!check) {
    return (
      <p className="small notice-warning" data-testid="consolidate-check" data-verdict="none">
        Not checked yet: the console checks after the next cluster refresh (Refresh above), and
        again, live, when the first threshold fires. Until a check says ✓ the cluster goes down as
        one unit.
      </p>
    );
  }
  const verdict = VERDICT[check.verdict];
  return (
    <div data-testid="consolidate-check" data-verdict={check.verdict} className="small">
      <p>
        <span className={verdict.className}>{verdict.text}</span>{" "}
        <span className="muted">
          (checked <LocalTime iso={check.checkedAt} />)
        </span>
      </p>
      {check.problems.length > 0 && (
        <>
          <ul className="notice-error">
            {check.problems.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
          <p>
            So nothing happens at the first threshold: the whole cluster goes down as one unit at
            the final one.
          </p>
        </>
      )}
      {check.findings.length > 0 && (
        <ul className="muted">
          {check.findings.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

const FIELDS = [
  "consolidate.mode",
  "consolidate.remainingNode",
  "consolidate.firstThreshold.runtimeBelowSeconds",
  "consolidate.firstThreshold.chargeBelowPercent",
  "consolidate.firstThreshold.onBatteryForSeconds",
  "consolidate.firstThreshold",
] as const;

const text = (value: number | null) => (value === null ? "" : String(value));

/** A consolidating cluster on its card: its settings (admins edit them) and the last check. */
export function ConsolidatePanel({ group }: { group: ClusterGroupView }) {
  const canSet = useCan("admin");
  const queryClient = useQueryClient();
  const { state, pending, errorOf, formProps, formError } = useActionForm(
    setClusterConsolidateAction,
    FIELDS,
  );
  useEffect(() => {
    if (state?.ok) void queryClient.invalidateQueries({ queryKey: powerKeys.clusters });
  }, [state, queryClient]);
  const settings = group.consolidate;
  // Several clusters may consolidate: each form's controls get ids of their own.
  const idOf = (field: (typeof FIELDS)[number]) => `cluster-${group.id}-${field}`;
  return (
    <div data-testid={`consolidate-${group.label}`}>
      <h3>Consolidate</h3>
      <p className="small">
        At the first threshold the guests of every node but one{" "}
        {settings.mode === "migrate" ? "move to" : "are stopped; staying up:"} the node that stays,
        and the other nodes go down; that node runs until the ordinary trigger (the final threshold)
        shuts it down the ordinary way. Now: {describeConsolidate(settings)}.
      </p>
      <ConsolidateCheckView check={group.consolidateCheck} />
      {canSet ? (
        <form {...formProps} data-testid={`consolidate-form-${group.label}`}>
          {formError}
          <input type="hidden" name="id" value={group.id} />
          <input type="hidden" name="policy" value="consolidate" />
          <Field
            name="consolidate.mode"
            id={idOf("consolidate.mode")}
            label="At the first threshold, the guests of the nodes that go down are"
            error={errorOf("consolidate.mode")}
          >
            {(props) => (
              <select {...props} className="control" defaultValue={settings.mode}>
                <option value="migrate">migrated to the node that stays (live)</option>
                <option value="stop">stopped</option>
              </select>
            )}
          </Field>
          <Field
            name="consolidate.remainingNode"
            id={idOf("consolidate.remainingNode")}
            label="The node that stays up"
            hint="Where the console runs on this cluster, its node stays whatever is chosen here."
            error={errorOf("consolidate.remainingNode")}
          >
            {(props) => (
              <select {...props} className="control" defaultValue={settings.remainingNode ?? ""}>
                <option value="">the console&apos;s node (none chosen)</option>
                {group.nodes.map((node) => (
                  <option key={node.name} value={node.name}>
                    {node.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <fieldset>
            <legend>First threshold (the first that fires; empty: off)</legend>
            <TextField
              name="consolidate.firstThreshold.runtimeBelowSeconds"
              id={idOf("consolidate.firstThreshold.runtimeBelowSeconds")}
              label="Runtime left below (seconds)"
              hint="E.g. half the runtime a full battery gives."
              inputMode="numeric"
              defaultValue={text(settings.firstThreshold.runtimeBelowSeconds)}
              error={errorOf("consolidate.firstThreshold.runtimeBelowSeconds")}
            />
            <TextField
              name="consolidate.firstThreshold.chargeBelowPercent"
              id={idOf("consolidate.firstThreshold.chargeBelowPercent")}
              label="Charge below (%)"
              inputMode="numeric"
              defaultValue={text(settings.firstThreshold.chargeBelowPercent)}
              error={errorOf("consolidate.firstThreshold.chargeBelowPercent")}
            />
            <TextField
              name="consolidate.firstThreshold.onBatteryForSeconds"
              id={idOf("consolidate.firstThreshold.onBatteryForSeconds")}
              label="On battery for (seconds, by the console's clock)"
              inputMode="numeric"
              defaultValue={text(settings.firstThreshold.onBatteryForSeconds)}
              error={
                errorOf("consolidate.firstThreshold.onBatteryForSeconds") ??
                errorOf("consolidate.firstThreshold")
              }
            />
          </fieldset>
          {state?.ok && (
            <p className="notice notice-ok" role="status" data-testid="consolidate-saved">
              Saved. The console checks again against the cluster as it is now.
            </p>
          )}
          <SubmitActions
            pending={pending}
            label="Save consolidate settings"
            pendingLabel="Saving…"
            testId={`consolidate-save-${group.label}`}
          />
        </form>
      ) : (
        <p className="muted small">Only an admin changes these settings.</p>
      )}
    </div>
  );
}
