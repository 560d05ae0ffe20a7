"use client";

import { useState, useTransition, type ReactNode } from "react";
import type { ActionResult } from "@/lib/actions/action-result";
import { ConfirmDialog } from "./confirm-dialog";
import { useHydrated } from "./use-now";

type Succeeded<R> = Extract<R, { ok: true }>;

/**
 * One server action behind a button, confirmed in a dialog first or not: `ask` opens the dialog
 * (without the previous attempt's error), `run` calls the action. Success closes the dialog and
 * calls `onSuccess`; a refusal becomes `error` (the dialog keeps it, so the person can cancel).
 * `onSettled` runs after either, e.g. to re-read what the action changed.
 */
export function useConfirmedAction<R extends ActionResult>(
  action: () => Promise<R>,
  handlers: {
    onSuccess?: (result: Succeeded<R>) => void | Promise<unknown>;
    onSettled?: () => Promise<unknown>;
  } = {},
) {
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const run = () =>
    startTransition(async () => {
      setError(null);
      const result = await action();
      if (result.ok) {
        setOpen(false);
        await handlers.onSuccess?.(result as Succeeded<R>);
      } else setError(result.message);
      await handlers.onSettled?.();
    });
  return {
    open,
    error,
    pending,
    run,
    ask: () => {
      setError(null);
      setOpen(true);
    },
    cancel: () => setOpen(false),
  };
}

export type ConfirmedActionState = ReturnType<typeof useConfirmedAction>;

/**
 * The button of a `useConfirmedAction`. With `confirm`, it opens the confirmation dialog and the
 * dialog runs the action; without, it runs the action at once, says it is working while pending
 * and shows a refusal under itself.
 */
export function ConfirmedAction({
  state,
  label,
  pendingLabel,
  className = "button",
  testId,
  confirm,
}: {
  state: ConfirmedActionState;
  label: ReactNode;
  /** The button's text while the action runs (immediate actions only). */
  pendingLabel?: string;
  className?: string;
  testId: string;
  confirm?: { title: string; confirmLabel: string; testId: string; body: ReactNode };
}) {
  // Server-rendered, the button has no handler until the page hydrates: a press then would do
  // nothing and say nothing, so it is disabled until it can act.
  const hydrated = useHydrated();
  if (!confirm) {
    return (
      <>
        <button
          type="button"
          className={className}
          onClick={state.run}
          disabled={state.pending || !hydrated}
          data-testid={testId}
        >
          {state.pending && pendingLabel ? pendingLabel : label}
        </button>
        {state.error && (
          <p className="field-error" role="alert">
            {state.error}
          </p>
        )}
      </>
    );
  }
  return (
    <>
      <button
        type="button"
        className={className}
        onClick={state.ask}
        disabled={!hydrated}
        data-testid={testId}
      >
        {label}
      </button>
      <ConfirmDialog
        open={state.open}
        title={confirm.title}
        confirmLabel={confirm.confirmLabel}
        pending={state.pending}
        error={state.error}
        onConfirm={state.run}
        onCancel={state.cancel}
        testId={confirm.testId}
      >
        {confirm.body}
      </ConfirmDialog>
    </>
  );
}
