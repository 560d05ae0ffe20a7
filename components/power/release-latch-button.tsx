"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { releaseUpsLatchAction } from "@/lib/actions/power/release-ups-latch";
import { useCan } from "../actor-context";
import { ConfirmDialog } from "../confirm-dialog";
import { powerKeys } from "./power-keys";

/** An admin releases a latched trigger by hand, after saying what that means. */
export function ReleaseLatchButton({ upsId, upsName }: { upsId: string; upsName: string }) {
  const canAct = useCan("admin");
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  if (!canAct) return null;
  const release = () =>
    startTransition(async () => {
      setError(null);
      const result = await releaseUpsLatchAction({ upsId });
      if (result.ok) setOpen(false);
      else setError(result.message);
      await queryClient.invalidateQueries({ queryKey: powerKeys.all });
    });
  return (
    <>
      <button
        type="button"
        className="button"
        onClick={() => {
          setError(null);
          setOpen(true);
        }}
        data-testid={`release-latch-${upsName}`}
      >
        Release latch…
      </button>
      <ConfirmDialog
        open={open}
        title={`Release the latch of ${upsName}`}
        confirmLabel="Release latch"
        pending={pending}
        error={error}
        onConfirm={release}
        onCancel={() => setOpen(false)}
        testId="release-latch-dialog"
      >
        <p>
          Release the latched trigger now instead of waiting for the stable-mains period? If{" "}
          {upsName} is still on battery, its triggers fire again with the next reading and its
          targets become due again.
        </p>
      </ConfirmDialog>
    </>
  );
}
