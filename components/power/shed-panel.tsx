"use client";

import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import type { ShedGuestView, ShedView } from "@/lib/power/queries/shed-view";
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval, useLiveMessages } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import { useLiveRefresh } from "./power-refresh";
import { PowerRunVerdictLine } from "./run-verdict";

const STATE_WORDS: Record<ShedGuestView["state"], string> = {
  shed: "shut down (read back stopped)",
  would: "would shut down (dry-run: nothing sent)",
  "left-running": "left running",
  stopping: "shutting down…",
  "not-stopped": "not read stopped",
};

/**
 * Early load shedding on the power page: which guests are shed and when (the settings, in one
 * line), and the latest shed as its run recorded it — each guest shut down and read back
 * stopped, would be (dry-run) or left running and why, and whether mains came back first and
 * they were started again. Live: every shed event and run message refreshes it.
 */
export function ShedPanel({ initial }: { initial: ShedView }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data } = useQuery({
    queryKey: powerKeys.shed,
    queryFn: () => fetchJson<ShedView>("/api/power/shed"),
    initialData: initial,
    refetchInterval,
  });
  const refresh = useLiveRefresh(powerKeys.shed);
  const runIds = [data.latest?.runId, data.latest?.restart?.runId];
  useLiveMessages((message) => {
    if (message.type === "run" && runIds.includes(message.runId)) refresh();
  });
  const { settings, latest } = data;
  return (
    <section className="panel" aria-labelledby="shed-heading" data-testid="shed-panel">
      <h2 id="shed-heading">Early shedding</h2>
      <p className="muted" data-testid="shed-rule">
        {settings.enabled ? (
          <>
            On: after <strong>{settings.afterMinutes} min</strong> on battery (the console&apos;s
            own clock), before the main trigger, the running guests tagged{" "}
            <code>{settings.tag}</code>
            {settings.guests.length > 0 && (
              <>
                {" "}
                and{" "}
                {settings.guests.map((g, i) => (
                  <span key={`${g.node}/${g.vmid}`}>
                    {i > 0 && ", "}
                    <code>
                      {g.node}/{g.vmid}
                    </code>
                  </span>
                ))}
              </>
            )}{" "}
            on the hosts of that UPS are shut down — HA-managed guests excepted. Which guests carry
            the tag is read from Proxmox at that moment. They start again when mains returns first,
            else with the way back.
          </>
        ) : (
          <>
            Off: no guest is shut down before the main trigger. Admins turn it on in the settings.
          </>
        )}
      </p>
      {latest && (
        <div data-testid="shed-latest">
          <PowerRunVerdictLine verdict={latest.verdict} testId="shed-verdict" />
          <p className="muted small">
            Started {formatDateTime(latest.startedAt)} ·{" "}
            <Link href={`/power/runs?run=${latest.runId}`}>its timeline and log</Link>
            {latest.restart && (
              <>
                {" "}
                ·{" "}
                <Link href={`/power/runs?run=${latest.restart.runId}`}>
                  the restart&apos;s timeline
                </Link>
              </>
            )}
          </p>
          {latest.guests.length > 0 && (
            <ul data-testid="shed-guests">
              {latest.guests.map((g) => (
                <li key={g.vmid} data-state={g.state}>
                  {g.type}/{g.vmid} on {g.node}: {STATE_WORDS[g.state]}
                  {g.why ? ` — ${g.why}` : ""}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}
