"use client";

import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { createPlanAction } from "@/lib/actions/create-plan";
import { SubmitActions, useActionForm } from "./action-form";
import { TextField } from "./form-fields";

/** Field order of the form: the first invalid one in this order gets the focus. */
const FIELDS = ["slug", "name"] as const;

/**
 * The new-plan form. On success it goes on to the plan's first version: a plan sells nothing
 * until one of its versions is published.
 */
export function CatalogPlanForm() {
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError } = useActionForm(createPlanAction, FIELDS);

  useEffect(() => {
    if (state?.ok) router.push(`/catalog/plans/${state.planId}/versions/new`);
  }, [state, router]);

  return (
    <form {...formProps} data-testid="plan-form">
      {formError}
      <TextField
        name="slug"
        label="Slug"
        error={errorOf("slug")}
        hint="A short identifier that never changes: lower-case letters, digits and inner hyphens (e.g. vps-small)."
        required
        autoComplete="off"
        spellCheck={false}
        className="mono"
      />
      <TextField
        name="name"
        label="Name"
        error={errorOf("name")}
        hint="The name customers see, e.g. VPS Small."
        required
        autoComplete="off"
      />
      <SubmitActions
        pending={pending}
        label="Create plan"
        pendingLabel="Creating…"
        testId="submit-plan"
      />
    </form>
  );
}
