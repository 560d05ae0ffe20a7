"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { releaseUpsLatchAction } from "@/lib/actions/power/release-ups-latch";
import type { PowerMode } from "@/lib/power/config/settings";
import type { PowerPlanPage } from "@/lib/power/queries/power-plan";
import type { UpsCard } from "@/lib/power/queries/ups-cards";
import { useCan } from "../actor-context";
import { formatElapsed } from "../format";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import { latchReleaseWarning } from "./ups-card-text";

/**
 * An admin releases a latched trigger by hand, after saying what that means. While the UPS is
 * still on battery the dialog says that the trigger fires again within seconds and shuts its
 * targets down again, and confirming it is the acknowledgement the release then needs.
 */
export function ReleaseLatchButton({ card, mode }: { card: UpsCard; mode: PowerMode }) {
  const canAct = useCan("admin");
  const queryClient = useQueryClient();
  // The plan the page already shows (its panel loads and refreshes it): what the UPS shuts down.
  const { data: plan } = useQuery({
    queryKey: powerKeys.plan,
    queryFn: () => fetchJson<PowerPlanPage>("/api/power/plan"),
    enabled: false,
  });
  const warning = latchReleaseWarning(card, mode, plan ?? null);
  const release = useConfirmedAction(
    () => releaseUpsLatchAction({ upsId: card.id, confirmDuringOutage: warning !== null }),
    { onSettled: () => queryClient.invalidateQueries({ queryKey: powerKeys.all }) },
  );
  if (!canAct) return null;
  const stableMains = formatElapsed(card.triggers.latchReleaseAfterStableMainsSeconds);
  return (
    <ConfirmedAction
      state={release}
      label="Release latch…"
      testId={`release-latch-${card.name}`}
      confirm={{
        title: `Release the latch of ${card.name}`,
        confirmLabel: warning === null ? "Release latch" : "Release latch during the outage",
        testId: "release-latch-dialog",
        body:
          warning === null ? (
            <p>
              Release the latched trigger now instead of waiting {stableMains} of stable mains?{" "}
              {card.lastReading
                ? `${card.name} last read on mains (${card.lastReading.rawStatus}); should the mains fail again, its triggers fire as in any outage.`
                : `The console has no reading of ${card.name}; its triggers fire again as soon as it reads on battery.`}
            </p>
          ) : (
            <>
              <p className="notice notice-error" data-testid="release-latch-outage">
                {warning}
              </p>
              <p>
                Release it now only if that is what you want. Otherwise wait: once the mains are
                back, the latch releases by itself after {stableMains} of stable mains.
              </p>
            </>
          ),
      }}
    />
  );
}
