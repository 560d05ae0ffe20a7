"use client";

import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { createPlanVersionAction } from "@/lib/actions/create-plan-version";
import { SubmitActions, useActionForm } from "./action-form";
import { TextField } from "./form-fields";

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

/** What a plan's first version offers until someone says otherwise (the README's lab path). */
export const FIRST_VERSION_SIZE = { cores: 2, memoryMib: 2048, diskGib: 20 };

/** Marks the sale window's zone-less `datetime-local` values as UTC before they are sent. */
function saleWindowInUtc(data: FormData) {
  for (const field of SALE_WINDOW) {
    const value = data.get(field);
    if (typeof value === "string" && value) data.set(field, `${value}Z`);
  }
}

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
  // A first version starts from a small VM's size: every field filled, nothing to look up.
  const size = defaults ?? FIRST_VERSION_SIZE;
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError } = useActionForm(
    createPlanVersionAction,
    FIELDS,
    saleWindowInUtc,
  );

  useEffect(() => {
    if (state?.ok) router.push(`/catalog#plan-${plan.slug}`);
  }, [state, router, plan.slug]);

  return (
    <form {...formProps} data-testid="version-form">
      {formError}
      <input type="hidden" name="planId" value={plan.id} />
      <TextField
        name="templateVmid"
        label="Template VMID"
        error={errorOf("templateVmid")}
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
          error={errorOf("cores")}
          defaultValue={String(size.cores)}
          inputMode="numeric"
          required
        />
        <TextField
          name="memoryMib"
          label="Memory (MiB)"
          error={errorOf("memoryMib")}
          defaultValue={String(size.memoryMib)}
          inputMode="numeric"
          required
        />
        <TextField
          name="diskGib"
          label="Disk (GiB)"
          error={errorOf("diskGib")}
          defaultValue={String(size.diskGib)}
          inputMode="numeric"
          required
        />
      </div>
      <div className="field-row">
        <TextField
          type="datetime-local"
          name="saleStartsAt"
          label="Sale starts (UTC, optional)"
          error={errorOf("saleStartsAt")}
          hint="Empty: on sale as soon as it is published."
        />
        <TextField
          type="datetime-local"
          name="saleEndsAt"
          label="Sale ends (UTC, optional)"
          error={errorOf("saleEndsAt")}
          hint="Empty: on sale until further notice."
        />
      </div>
      <SubmitActions
        pending={pending}
        label="Save as draft"
        pendingLabel="Saving…"
        testId="submit-version"
      />
    </form>
  );
}
