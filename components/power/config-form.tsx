"use client";

import { useState, type ReactNode } from "react";
import type { ActionResult } from "@/lib/actions/action-result";
import type { ConfigChangeResult } from "@/lib/actions/power/config-change";
import { SubmitActions, useActionForm } from "../action-form";
import styles from "./power.module.css";

type ConfigAction = (
  previous: ActionResult<ConfigChangeResult> | null,
  data: FormData,
) => Promise<ActionResult<ConfigChangeResult>>;

/**
 * A power configuration form: the action form's wiring plus the armed-plan guard. When the
 * action answers "not saved: this changes the armed plan", the form shows the change and a
 * button that saves it confirmed; editing any field withdraws that confirmation, so what is
 * confirmed is always what was shown.
 */
export function useConfigForm(action: ConfigAction, fields: readonly string[]) {
  const form = useActionForm(action, fields);
  const { state } = form;
  // The answer whose plan change an edit withdrew: that answer can no longer be confirmed.
  const [withdrawn, setWithdrawn] = useState<typeof state>(null);
  const confirmable = Boolean(state?.ok && !state.saved && withdrawn !== state);
  return {
    ...form,
    formProps: { ...form.formProps, onChange: () => setWithdrawn(state) },
    /** Inside the form: the hidden confirmation, sent only while the shown change stands. */
    confirmation: confirmable ? <input type="hidden" name="confirmPlanChange" value="yes" /> : null,
    confirmable,
  };
}

/** Under a config form: the armed-plan change to confirm, or what the saved change did. */
export function ConfigOutcome({
  state,
  confirmable,
  pending,
  savedText,
}: {
  state: ActionResult<ConfigChangeResult> | null;
  confirmable: boolean;
  pending: boolean;
  savedText: ReactNode;
}) {
  if (!state?.ok) return null;
  if (!state.saved) {
    if (!confirmable) return null;
    return (
      <div className="notice notice-warning" role="alert" data-testid="plan-change-confirm">
        <p>
          <strong>Not saved yet: this changes the armed shutdown plan.</strong>
        </p>
        <ul className={styles.diff}>
          {state.planChange.lines.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
        <SubmitActions
          pending={pending}
          label="Save and change the armed plan"
          pendingLabel="Saving…"
          testId="confirm-plan-change"
        />
      </div>
    );
  }
  return (
    <div className="notice notice-ok" role="status" data-testid="config-saved">
      <p>{savedText}</p>
      {state.planChange.changed && (
        <>
          <p>What this changed in the plan:</p>
          <ul className={styles.diff}>
            {state.planChange.lines.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
