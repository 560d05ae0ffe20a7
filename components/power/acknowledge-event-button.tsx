"use client";

import { useQueryClient } from "@tanstack/react-query";
import { acknowledgePowerEventAction } from "@/lib/actions/power/acknowledge-power-event";
import { useCan } from "../actor-context";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
import { powerKeys } from "./power-keys";

/** Acknowledge for operators; viewers see that it is not acknowledged yet. */
export function AcknowledgeEventButton({ eventId }: { eventId: number }) {
  const canAct = useCan("operator");
  const queryClient = useQueryClient();
  const acknowledge = useConfirmedAction(() => acknowledgePowerEventAction({ eventId }), {
    onSettled: async () => {
      await queryClient.invalidateQueries({ queryKey: powerKeys.events });
      await queryClient.invalidateQueries({ queryKey: powerKeys.overview });
    },
  });
  if (!canAct) return <span className="muted small">not yet</span>;
  return (
    <ConfirmedAction
      state={acknowledge}
      label="Acknowledge"
      pendingLabel="Acknowledging…"
      testId={`acknowledge-${eventId}`}
    />
  );
}
