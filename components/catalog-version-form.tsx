"use client";

import { useRouter } from "next/navigation";
import { useActionState, useEffect, useRef } from "react";
import {
  createPlanVersionAction,
  type CreatePlanVersionResult,
} from "@/lib/actions/create-plan-version";
import {
  errorsOf,
  FormError,
  submitKeepingInput,
  TextField,
  useFocusFirstInvalid,
} from "./form-fields";

/** Field order of the form: the first invalid one in this order gets the focus. */
const FIELDS = [
  "templateVmid",
  "cores",
  "memoryMib",
  "diskGib",
  "saleStartsAt",
  "saleEndsAt",
] as const;
const SALE_WINDOW = ["saleStartsAt", "saleEndsAt"] as const;

/**
 * The new-version form. Sale window times are entered and shown in UTC: a `datetime-local`
 * value has no zone, and the server must not read it in its own.
 */
export function CatalogVersionForm({
  plan,
  defaults,
}: {
  plan: { id: string; slug: string };
  /** The size of the plan's latest version, as a starting point. */
  defaults?: { cores: number; memoryMib: number; diskGib: number };
}) {
  const router = useRouter();
  const [state, formAction, pending] = useActionState<CreatePlanVersionResult | null, FormData>(
    createPlanVersionAction,
    null,
  );
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);
  useFocusFirstInvalid(state, FIELDS, formRef, formErrorRef);

  useEffect(() => {
    if (state?.ok) router.push(`/catalog#plan-${plan.slug}`);
  }, [state, router, plan.slug]);

  const errors = errorsOf(state);
  return (
    <form
      ref={formRef}
      className="form"
      action={formAction}
      noValidate
      onSubmit={submitKeepingInput(formAction, (data) => {
        for (const field of SALE_WINDOW) {
          const value = data.get(field);
          if (typeof value === "string" && value) data.set(field, `${value}Z`);
        }
      })}
      data-testid="version-form"
    >
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}
      <input type="hidden" name="planId" value={plan.id} />
      <TextField
        name="templateVmid"
        label="Template VMID"
        error={errors.templateVmid?.[0]}
        hint="The golden template this version is built from; Proxmox VMIDs run from 100 to 999999999."
        inputMode="numeric"
        required
        autoComplete="off"
        className="mono"
      />
      <div className="field-row">
        <TextField
          name="cores"
          label="Cores"
          error={errors.cores?.[0]}
          defaultValue={defaults ? String(defaults.cores) : undefined}
          inputMode="numeric"
          required
        />
        <TextField
          name="memoryMib"
          label="Memory (MiB)"
          error={errors.memoryMib?.[0]}
          defaultValue={defaults ? String(defaults.memoryMib) : undefined}
          inputMode="numeric"
          required
        />
        <TextField
          name="diskGib"
          label="Disk (GiB)"
          error={errors.diskGib?.[0]}
          defaultValue={defaults ? String(defaults.diskGib) : undefined}
          inputMode="numeric"
          required
        />
      </div>
      <div className="field-row">
        <TextField
          type="datetime-local"
          name="saleStartsAt"
          label="Sale starts (UTC, optional)"
          error={errors.saleStartsAt?.[0]}
          hint="Empty: on sale as soon as it is published."
        />
        <TextField
          type="datetime-local"
          name="saleEndsAt"
          label="Sale ends (UTC, optional)"
          error={errors.saleEndsAt?.[0]}
          hint="Empty: on sale until further notice."
        />
      </div>
      <div className="form-actions">
        <button
          type="submit"
          className="button button-primary"
          disabled={pending}
          data-testid="submit-version"
        >
          {pending ? "Saving…" : "Save as draft"}
        </button>
      </div>
    </form>
  );
}
