"use client";

import { useActionState, useRef, type ReactNode } from "react";
import type { ActionResult } from "@/lib/actions/action-result";
import { errorsOf, FormError, submitKeepingInput, useFocusFirstInvalid } from "./form-fields";

/*
 * The wiring every console form around a server action repeats: the action's state, the focus
 * moving to the first invalid field, the form-level error notice and the input-keeping submit.
 * The form itself stays in its component so its markup (test ids, hidden inputs) reads in place.
 */

type ServerAction<R> = (previous: R | null, data: FormData) => Promise<R>;

/**
 * A form posting to `action`. `fields` is the form's field order: the first invalid one in this
 * order gets the focus. `prepare` adjusts the submitted data (e.g. marking times as UTC).
 */
export function useActionForm<R extends ActionResult>(
  action: ServerAction<R>,
  fields: readonly string[],
  prepare?: (data: FormData) => void,
) {
  const [state, formAction, pending] = useActionState<R | null, FormData>(action, null);
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);
  useFocusFirstInvalid(state, fields, formRef, formErrorRef);
  const errors = errorsOf(state);
  return {
    state,
    pending,
    formRef,
    /** The first error of `field`, shown under it. */
    errorOf: (field: string): string | undefined => errors[field]?.[0],
    /** Spread on the `<form>`: `action` keeps it working before JavaScript loads. */
    formProps: {
      ref: formRef,
      className: "form",
      action: formAction,
      noValidate: true,
      onSubmit: submitKeepingInput(formAction, prepare),
    },
    /** The notice above the fields after a failed submit, or nothing. */
    formError:
      state && !state.ok ? <FormError state={state} fields={fields} ref={formErrorRef} /> : null,
  };
}

/** The single primary button of a form, saying what it does while the action runs. */
export function SubmitActions({
  pending,
  label,
  pendingLabel,
  testId,
}: {
  pending: boolean;
  label: ReactNode;
  pendingLabel: ReactNode;
  testId?: string;
}) {
  return (
    <div className="form-actions">
      <button
        type="submit"
        className="button button-primary"
        disabled={pending}
        data-testid={testId}
      >
        {pending ? pendingLabel : label}
      </button>
    </div>
  );
}
