"use client";

import { completeSetupAction } from "@/lib/actions/complete-setup";
import { SubmitActions, useActionForm } from "./action-form";
import { NewPasswordField, TextField } from "./form-fields";

const FIELDS = ["setupToken", "name", "password"] as const;

/** First start: the setup token from the terminal, then the first admin's name and password. */
export function SetupForm() {
  const { pending, errorOf, formProps, formError } = useActionForm(completeSetupAction, FIELDS);

  return (
    <form {...formProps} data-testid="setup-form">
      {formError}
      <TextField
        name="setupToken"
        label="Setup token"
        hint="Printed by npm start in its terminal: “First start: … enter setup token …”."
        error={errorOf("setupToken")}
        autoComplete="off"
        spellCheck={false}
        autoFocus
        required
      />
      <TextField
        name="name"
        label="Admin user name"
        error={errorOf("name")}
        autoComplete="username"
        required
      />
      <NewPasswordField name="password" label="Admin password" error={errorOf("password")} />
      <SubmitActions pending={pending} label="Create admin and sign in" pendingLabel="Creating…" />
    </form>
  );
}
