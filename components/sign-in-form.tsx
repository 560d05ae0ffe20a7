"use client";

import { useActionState, useRef } from "react";
import { signInAction, type SignInResult } from "@/lib/actions/sign-in";
import {
  errorsOf,
  FormError,
  submitKeepingInput,
  TextField,
  useFocusFirstInvalid,
} from "./form-fields";

const FIELDS = ["name", "password"] as const;

/** Name + password; on success the action redirects to `next`. */
export function SignInForm({ next }: { next: string | undefined }) {
  const [state, formAction, pending] = useActionState<SignInResult | null, FormData>(
    signInAction,
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
      data-testid="sign-in-form"
    >
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}
      {next && <input type="hidden" name="next" value={next} />}
      <TextField
        name="name"
        label="User name"
        error={errors.name?.[0]}
        autoComplete="username"
        autoFocus
        required
      />
      <TextField
        name="password"
        type="password"
        label="Password"
        error={errors.password?.[0]}
        autoComplete="current-password"
        required
      />
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={pending}>
          {pending ? "Signing in…" : "Sign in"}
        </button>
      </div>
    </form>
  );
}
