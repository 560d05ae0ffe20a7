"use client";

import { useActionState, useRef } from "react";
import {
  changeOwnPasswordAction,
  type ChangeOwnPasswordResult,
} from "@/lib/actions/change-own-password";
import {
  errorsOf,
  FormError,
  submitKeepingInput,
  TextField,
  useFocusFirstInvalid,
} from "./form-fields";

const FIELDS = ["currentPassword", "newPassword"] as const;

/** Own password change; other browsers signed in as you are signed out. */
export function ChangePasswordForm() {
  const [state, formAction, pending] = useActionState<ChangeOwnPasswordResult | null, FormData>(
    changeOwnPasswordAction,
    null,
  );
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);
  useFocusFirstInvalid(state, FIELDS, formRef, formErrorRef);
  const errors = errorsOf(state);
  return (
    <form
      ref={formRef}
      className="form"
      action={formAction}
      noValidate
      onSubmit={submitKeepingInput(formAction)}
      data-testid="change-password-form"
    >
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}
      {state?.ok && (
        <p className="notice" role="status">
          Password changed. Other sessions of yours were signed out.
        </p>
      )}
      <TextField
        name="currentPassword"
        type="password"
        label="Current password"
        error={errors.currentPassword?.[0]}
        autoComplete="current-password"
        required
      />
      <TextField
        name="newPassword"
        type="password"
        label="New password"
        hint="At least 12 characters."
        error={errors.newPassword?.[0]}
        autoComplete="new-password"
        required
      />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={pending}>
          {pending ? "Changing…" : "Change password"}
        </button>
      </div>
    </form>
  );
}
