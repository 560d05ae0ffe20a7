"use client";

import { useActionState, useRef } from "react";
import { completeSetupAction, type CompleteSetupResult } from "@/lib/actions/complete-setup";
import {
  errorsOf,
  FormError,
  submitKeepingInput,
  TextField,
  useFocusFirstInvalid,
} from "./form-fields";

const FIELDS = ["setupToken", "name", "password"] as const;

/** First start: the setup token from the terminal, then the first admin's name and password. */
export function SetupForm() {
  const [state, formAction, pending] = useActionState<CompleteSetupResult | null, FormData>(
    completeSetupAction,
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
      data-testid="setup-form"
    >
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}
      <TextField
        name="setupToken"
        label="Setup token"
        hint="Printed by npm start in its terminal: “First start: … enter setup token …”."
        error={errors.setupToken?.[0]}
        autoComplete="off"
        spellCheck={false}
        autoFocus
        required
      />
      <TextField
        name="name"
        label="Admin user name"
        error={errors.name?.[0]}
        autoComplete="username"
        required
      />
      <TextField
        name="password"
        type="password"
        label="Admin password"
        hint="At least 12 characters."
        error={errors.password?.[0]}
        autoComplete="new-password"
        required
      />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={pending}>
          {pending ? "Creating…" : "Create admin and sign in"}
        </button>
      </div>
    </form>
  );
}
