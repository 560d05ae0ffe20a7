"use client";

import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/actions/action-result";
import type { ConfigChangeResult } from "@/lib/actions/power/config-change";
import { ConfirmDialog } from "../confirm-dialog";
import styles from "./power.module.css";

/**
 * Removing a UPS or a target, behind a confirmation that says what goes. While armed, when the
 * removal changes the plan, the dialog then lists the change and asks once more.
 */
export function DeleteConfigButton({
  id,
  name,
  what,
  consequence,
  action,
  testId,
}: {
  id: string;
  name: string;
  what: string;
  consequence: string;
  action: (input: Record<string, unknown>) => Promise<ActionResult<ConfigChangeResult>>;
  testId: string;
}) {
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const [planChange, setPlanChange] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const remove = () =>
    startTransition(async () => {
      setError(null);
      const result = await action({ id, confirmPlanChange: planChange !== null });
      if (!result.ok) return setError(result.message);
      if (!result.saved) return setPlanChange(result.planChange.lines);
      setOpen(false);
      router.refresh();
    });
  return (
    <>
      <button
        type="button"
        className="button button-danger"
        onClick={() => {
          setError(null);
          setPlanChange(null);
          setOpen(true);
        }}
        data-testid={testId}
      >
        Remove
      </button>
      <ConfirmDialog
        open={open}
        title={`Remove ${what} ${name}`}
        confirmLabel={planChange ? "Remove and change the armed plan" : `Remove ${name}`}
        pending={pending}
        error={error}
        onConfirm={remove}
        onCancel={() => setOpen(false)}
        testId={`${testId}-dialog`}
      >
        <p>{consequence}</p>
        {planChange && (
          <>
            <p>
              <strong>This changes the armed shutdown plan:</strong>
            </p>
            <ul className={styles.diff}>
              {planChange.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          </>
        )}
      </ConfirmDialog>
    </>
  );
}
