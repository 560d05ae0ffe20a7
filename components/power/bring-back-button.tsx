"use client";

import { useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { bringBackNowAction } from "@/lib/actions/power/bring-back-now";
import type { PowerBackPageView } from "@/lib/power/queries/power-back-run";
import type { PowerBackPreview } from "@/lib/power/queries/power-back-preview";
import { useCan } from "../actor-context";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
import { usePowerBackView } from "./power-back-run-panel";
import { powerKeys } from "./power-keys";
import { CONTROLLER_WORDS } from "./controller-words";

/**
 * An admin's "Bring back now" after an outage: a power-back run without waiting for the policy
 * (mains stable, charge, runtime). The dialog says exactly what it will do now — the mode, each
 * host and how it is powered on (or that it will not be), the guests, the clusters restored —
 * from the same plan the run freezes; the answer links to the run.
 */
export function BringBackButton({ initial }: { initial: PowerBackPageView }) {
  const canAct = useCan("admin");
  const queryClient = useQueryClient();
  const preview = usePowerBackView(initial).bringBack;
  const [runId, setRunId] = useState<string | null>(null);
  const start = useConfirmedAction(() => bringBackNowAction({}), {
    onSuccess: (result) => setRunId(result.runId),
    onSettled: () => queryClient.invalidateQueries({ queryKey: powerKeys.all }),
  });
  if (!canAct) return null;
  return (
    <div>
      <ConfirmedAction
        state={start}
        label="Bring back now…"
        testId="bring-back-now"
        confirm={{
          title: "Bring the fleet back now",
          confirmLabel: "Bring back",
          testId: "bring-back-dialog",
          body: <WhatHappens preview={preview} />,
        }}
      />
      {runId && (
        <p className="small" data-testid="bring-back-run">
          The way back started: it shows live under &quot;Latest way back&quot; at the top of this
          page, and on <Link href={`/power/runs?run=${runId}`}>its own page</Link> with its
          timeline.
        </p>
      )}
    </div>
  );
}

function WhatHappens({ preview }: { preview: PowerBackPreview }) {
  if ("refused" in preview) {
    return (
      <p data-testid="bring-back-refused">
        Nothing to bring back now: {preview.refused} Bring back would be refused.
      </p>
    );
  }
  const dry = preview.mode !== "armed";
  const without = preview.hosts.filter((h) => h.controller === null);
  return (
    <div data-testid="bring-back-what" data-mode={preview.mode}>
      {dry ? (
        <p>
          <strong>Dry-run: nothing is sent.</strong> The way back records what it would do, step by
          step, as &quot;would …&quot;:
        </p>
      ) : (
        <p>
          <strong>Armed: this powers hosts on and starts guests</strong>, without waiting for the
          mains to hold and the battery to recharge:
        </p>
      )}
      <ol>
        <li>
          {dry ? "Would power on" : "Power on"}, in this order:{" "}
          {preview.hosts.map((h, i) => (
            <span key={h.name}>
              {i > 0 && ", "}
              <strong>{h.name}</strong>{" "}
              {h.controller ? `(${CONTROLLER_WORDS[h.controller]})` : "(no power controller)"}
            </span>
          ))}
          .
        </li>
        {!dry && <li>Wait for each host&apos;s API and each cluster&apos;s quorum.</li>}
        {preview.clusters.map((c) => (
          <li key={c.name}>
            {c.name}:{" "}
            {[
              c.cephFlags.length > 0 &&
                `${dry ? "would clear" : "once no placement group is down, clear"} ${c.cephFlags.join(", ")}`,
              c.haDisarmed && `${dry ? "would re-arm" : "re-arm"} HA`,
            ]
              .filter(Boolean)
              .join("; ")}
            .
          </li>
        ))}
        <li>
          {preview.guests === 0
            ? "No guest to start: none was recorded running before the outage."
            : `${dry ? "Would start" : "Start"} the ${preview.guests} guest(s) that ran before, in their startup order.`}
        </li>
      </ol>
      {without.length > 0 && (
        <p className="field-error" data-testid="bring-back-without-controller">
          {without.map((h) => h.name).join(", ")} {without.length === 1 ? "has" : "have"} no power
          controller: {without.length === 1 ? "it does" : "they do"} not come back on{" "}
          {without.length === 1 ? "its" : "their"} own — power{" "}
          {without.length === 1 ? "it" : "them"} on by hand.
        </p>
      )}
      <p className="muted small">Mains lost again on a feed stops the way back at once.</p>
    </div>
  );
}
