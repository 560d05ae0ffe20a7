"use client";

import { useRouter } from "next/navigation";
import { useActionState, useEffect, useRef } from "react";
import { createPlanAction, type CreatePlanResult } from "@/lib/actions/create-plan";
import {
  errorsOf,
  FormError,
  submitKeepingInput,
  TextField,
  useFocusFirstInvalid,
} from "./form-fields";

/** Field order of the form: the first invalid one in this order gets the focus. */
const FIELDS = ["slug", "name"] as const;

/**
 * The new-plan form. On success it goes on to the plan's first version: a plan sells nothing
 * until one of its versions is published.
 */
export function CatalogPlanForm() {
  const router = useRouter();
  const [state, formAction, pending] = useActionState<CreatePlanResult | null, FormData>(
    createPlanAction,
    null,
  );
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);
  useFocusFirstInvalid(state, FIELDS, formRef, formErrorRef);

  useEffect(() => {
    if (state?.ok) router.push(`/catalog/plans/${state.planId}/versions/new`);
  }, [state, router]);

  const errors = errorsOf(state);
  return (
    <form
      ref={formRef}
      className="form"
      action={formAction}
      noValidate
      onSubmit={submitKeepingInput(formAction)}
      data-testid="plan-form"
    >
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}
      <TextField
        name="slug"
        label="Slug"
        error={errors.slug?.[0]}
        hint="A short identifier that never changes: lower-case letters, digits and inner hyphens (e.g. vps-small)."
        required
        autoComplete="off"
        spellCheck={false}
        className="mono"
      />
      <TextField
        name="name"
        label="Name"
        error={errors.name?.[0]}
        hint="The name customers see, e.g. VPS Small."
        required
        autoComplete="off"
      />
      <div className="form-actions">
        <button
          type="submit"
          className="button button-primary"
          disabled={pending}
          data-testid="submit-plan"
        >
          {pending ? "Creating…" : "Create plan"}
        </button>
      </div>
    </form>
  );
}
