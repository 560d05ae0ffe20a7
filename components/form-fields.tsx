"use client";

import {
  startTransition,
  useEffect,
  type FormEvent,
  type InputHTMLAttributes,
  type ReactNode,
  type RefObject,
} from "react";
import type { ActionResult } from "@/lib/actions/action-result";

/*
 * The pieces every console form shares: labelled fields whose error is tied to the control
 * (aria-invalid + aria-describedby), the form-level error notice, moving the focus to the first
 * invalid field after a failed submit, and submitting without losing what was typed.
 */

type Failure = Extract<ActionResult, { ok: false }>;

/** Field errors of a failed result, or none. */
export function errorsOf(state: ActionResult | null): Record<string, string[]> {
  return state && !state.ok ? state.fieldErrors : {};
}

/**
 * After a failed submit, focuses the first invalid field in `fields` order, or the form-level
 * notice when no visible field is to blame (e.g. the plan was deleted meanwhile).
 */
export function useFocusFirstInvalid(
  state: ActionResult | null,
  fields: readonly string[],
  formRef: RefObject<HTMLFormElement | null>,
  formErrorRef: RefObject<HTMLDivElement | null>,
) {
  useEffect(() => {
    if (!state || state.ok) return;
    const first = fields.find((field) => state.fieldErrors[field]?.length);
    const target = first
      ? formRef.current?.querySelector<HTMLElement>(`[name="${first}"]`)
      : formErrorRef.current;
    target?.focus();
  }, [state, fields, formRef, formErrorRef]);
}

/** The failure's message, plus any field error that has no field on this form. */
export function FormError({
  state,
  fields,
  ref,
}: {
  state: Failure;
  fields: readonly string[];
  ref: RefObject<HTMLDivElement | null>;
}) {
  const unplaced = Object.entries(state.fieldErrors).filter(([field]) => !fields.includes(field));
  return (
    <div
      ref={ref}
      className="notice notice-error"
      role="alert"
      tabIndex={-1}
      data-testid="form-error"
    >
      <p>{state.message}</p>
      {unplaced.map(([field, messages]) => (
        <p key={field}>{messages[0]}</p>
      ))}
    </div>
  );
}

type ControlProps = {
  id: string;
  name: string;
  "aria-invalid": true | undefined;
  "aria-describedby": string | undefined;
};

/**
 * A labelled control. Its id is its name unless `id` says otherwise: a page that shows the same
 * form more than once (one per cluster) gives each its own ids, so every label, hint and error
 * stays tied to its own control.
 */
export function Field({
  name,
  id = name,
  label,
  error,
  hint,
  children,
}: {
  name: string;
  id?: string;
  label: string;
  error: string | undefined;
  hint?: string;
  children: (props: ControlProps) => ReactNode;
}) {
  // An error that says what the hint says replaces it: the rule is read once, in red.
  const shownHint = hint && error?.trim() === hint.trim() ? undefined : hint;
  const describedBy = [shownHint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ");
  return (
    <div className={`field${error ? " field-invalid" : ""}`}>
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        name,
        "aria-invalid": error ? true : undefined,
        "aria-describedby": describedBy || undefined,
      })}
      {shownHint && (
        <p id={`${id}-hint`} className="field-hint">
          {shownHint}
        </p>
      )}
      <FieldError field={name} id={id} error={error} />
    </div>
  );
}

/** A field's error, for controls that are not a single labelled input (radio groups). */
export function FieldError({
  field,
  id = field,
  error,
}: {
  field: string;
  /** The control's id, where it is not the field's name. */
  id?: string;
  error: string | undefined;
}) {
  if (!error) return null;
  return (
    <p id={`${id}-error`} className="field-error" data-testid={`error-${field}`}>
      <span aria-hidden="true">✕ </span>
      {error}
    </p>
  );
}

/**
 * Submits through a transition ourselves: React resets a form after an action passed to
 * `action`, which would throw away what the operator typed. Without JavaScript, `action` works.
 */
export function submitKeepingInput(
  formAction: (data: FormData) => void,
  prepare?: (data: FormData) => void,
) {
  return (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    prepare?.(data);
    startTransition(() => formAction(data));
  };
}

export function TextField({
  name,
  id,
  label,
  error,
  hint,
  ...input
}: {
  name: string;
  id?: string;
  label: string;
  error: string | undefined;
  hint?: string;
} & Omit<InputHTMLAttributes<HTMLInputElement>, "name" | "id">) {
  return (
    <Field name={name} id={id} label={label} error={error} hint={hint}>
      {(props) => <input type="text" {...input} {...props} />}
    </Field>
  );
}

/** A password being set: the hint states the length rule the server enforces (ZNewPassword). */
export function NewPasswordField({
  name,
  label,
  error,
  autoFocus,
}: {
  name: string;
  label: string;
  error: string | undefined;
  autoFocus?: boolean;
}) {
  return (
    <TextField
      name={name}
      type="password"
      label={label}
      hint="At least 12 characters."
      error={error}
      autoComplete="new-password"
      autoFocus={autoFocus}
      required
    />
  );
}
