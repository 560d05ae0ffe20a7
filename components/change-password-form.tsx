"use client";

import { changeOwnPasswordAction } from "@/lib/actions/change-own-password";
import { SubmitActions, useActionForm } from "./action-form";
import { NewPasswordField, TextField } from "./form-fields";

const FIELDS = ["currentPassword", "newPassword"] as const;

/** Own password change; other browsers signed in as you are signed out. */
export function ChangePasswordForm() {
  const { state, pending, errorOf, formProps, formError } = useActionForm(
    changeOwnPasswordAction,
    FIELDS,
  );
  return (
    <form {...formProps} data-testid="change-password-form">
      {formError}
      {state?.ok && (
        <p className="notice" role="status">
          Password changed. Other sessions of yours were signed out.
        </p>
      )}
      <TextField
        name="currentPassword"
        type="password"
        label="Current password"
        error={errorOf("currentPassword")}
        autoComplete="current-password"
        required
      />
      <NewPasswordField name="newPassword" label="New password" error={errorOf("newPassword")} />
      <SubmitActions pending={pending} label="Change password" pendingLabel="Changing…" />
    </form>
  );
}
