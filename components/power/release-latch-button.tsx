"use client";

import { useQueryClient } from "@tanstack/react-query";
import { releaseUpsLatchAction } from "@/lib/actions/power/release-ups-latch";
import { useCan } from "../actor-context";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
import { powerKeys } from "./power-keys";

/** An admin releases a latched trigger by hand, after saying what that means. */
export function ReleaseLatchButton({ upsId, upsName }: { upsId: string; upsName: string }) {
  const canAct = useCan("admin");
  const queryClient = useQueryClient();
  const release = useConfirmedAction(() => releaseUpsLatchAction({ upsId }), {
    onSettled: () => queryClient.invalidateQueries({ queryKey: powerKeys.all }),
  });
  if (!canAct) return null;
  return (
    <ConfirmedAction
      state={release}
      label="Release latch…"
      testId={`release-latch-${upsName}`}
      confirm={{
        title: `Release the latch of ${upsName}`,
        confirmLabel: "Release latch",
        testId: "release-latch-dialog",
        body: (
          <p>
            Release the latched trigger now instead of waiting for the stable-mains period? If{" "}
            {upsName} is still on battery, its triggers fire again with the next reading and its
            targets become due again.
          </p>
        ),
      }}
    />
  );
}
