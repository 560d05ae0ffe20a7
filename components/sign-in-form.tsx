"use client";

import { signInAction } from "@/lib/actions/sign-in";
import { SubmitActions, useActionForm } from "./action-form";
import { TextField } from "./form-fields";

const FIELDS = ["name", "password"] as const;

/** Name + password; on success the action redirects to `next`. */
export function SignInForm({ next }: { next: string | undefined }) {
  const { pending, errorOf, formProps, formError } = useActionForm(signInAction, FIELDS);

  return (
    <form {...formProps} data-testid="sign-in-form">
      {formError}
      {next && <input type="hidden" name="next" value={next} />}
      <TextField
        name="name"
        label="User name"
        error={errorOf("name")}
        autoComplete="username"
        autoFocus
        required
      />
      <TextField
        name="password"
        type="password"
        label="Password"
        error={errorOf("password")}
        autoComplete="current-password"
        required
      />
      <SubmitActions pending={pending} label="Sign in" pendingLabel="Signing in…" />
    </form>
  );
}
