"use client";

import Link from "next/link";
import type { HostRunSummary } from "@/lib/hosts/list-host-runs";
import { DECOMMISSION_HOST } from "@/lib/steps/onboarding/decommission/name";
import { formatDateTime } from "./format";

const PIPELINE_NAME: Record<string, string> = {
  "onboard-host": "Onboarding",
  [DECOMMISSION_HOST]: "Decommission",
};

/**
 * Every run of the host, newest first, each one link away: a retired host's history stays
 * readable here (timeline, events and log of any run via `?run=`; the raw log for download).
 * Its rows come with the host's own live query, so a run that ends reads so without a reload.
 */
export function HostRuns({
  hostId,
  runs,
  shownRunId,
}: {
  hostId: string;
  runs: HostRunSummary[];
  shownRunId: string | null;
}) {
  if (runs.length < 2) return null;
  return (
    <section className="panel" aria-labelledby="history-heading" data-testid="host-runs">
      <h2 id="history-heading">History</h2>
      <ul className="host-runs">
        {runs.map((run, index) => (
          <li key={run.id} data-testid={`host-run-${run.id}`} data-outcome={run.outcome}>
            {run.id === shownRunId ? (
              <strong aria-current="true">{PIPELINE_NAME[run.pipeline] ?? run.pipeline}</strong>
            ) : (
              <Link href={index === 0 ? `/hosts/${hostId}` : `/hosts/${hostId}?run=${run.id}`}>
                {PIPELINE_NAME[run.pipeline] ?? run.pipeline}
              </Link>
            )}{" "}
            <span className="muted small">
              <span
                className={`run-outcome run-outcome-${run.outcome}`}
                data-testid="host-run-outcome"
              >
                {run.outcome}
              </span>
              {run.failedStep
                ? ` ${run.outcome === "aborted" ? "during" : "at"} ${run.failedStep}`
                : ""}{" "}
              · started{" "}
              <time dateTime={run.createdAt} suppressHydrationWarning>
                {formatDateTime(run.createdAt)}
              </time>{" "}
              ·{" "}
              <a href={`/api/runs/${run.id}/log?download=1`} download>
                raw log
              </a>
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
