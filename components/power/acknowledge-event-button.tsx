"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState, useTransition } from "react";
import { acknowledgePowerEventAction } from "@/lib/actions/power/acknowledge-power-event";
import { useCan } from "../actor-context";
import { powerKeys } from "./power-keys";

/** Acknowledge for operators; viewers see that it is not acknowledged yet. */
export function AcknowledgeEventButton({ eventId }: { eventId: number }) {
  const canAct = useCan("operator");
  const queryClient = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  if (!canAct) return <span className="muted small">not yet</span>;
  const acknowledge = () =>
    startTransition(async () => {
      setError(null);
      const result = await acknowledgePowerEventAction({ eventId });
      if (!result.ok) setError(result.message);
      await queryClient.invalidateQueries({ queryKey: powerKeys.events });
      await queryClient.invalidateQueries({ queryKey: powerKeys.overview });
    });
  return (
    <>
      <button
        type="button"
        className="button"
        onClick={acknowledge}
        disabled={pending}
        data-testid={`acknowledge-${eventId}`}
      >
        {pending ? "Acknowledging…" : "Acknowledge"}
      </button>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </>
  );
}
