"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { formatDuration } from "@/lib/logs/text";
import type { PowerRunSummary } from "@/lib/power/queries/timeline";
import { formatDateTime } from "../format";
import {
  useFallbackRefetchInterval,
  useLiveMessages,
  usePowerLiveMessages,
} from "../live-provider";
import { fetchJson } from "../queries";
import { useLiveRefresh } from "./power-refresh";
import { describeOrigin } from "./timeline";
import styles from "./timeline.module.css";
import { PowerRunVerdictLine } from "./run-verdict";

type RunsPage = { runs: PowerRunSummary[]; nextBefore: string | null };

export const powerRunsKey = ["power", "runs"] as const;

const OUTCOME_WORDS: Record<string, string> = {
  ok: "done",
  failed: "failed",
  "timed-out": "timed out",
  unknown: "unknown",
  "would-do": "would do",
  open: "in flight",
};

function outcomeSummary(run: PowerRunSummary): string {
  if (run.actionCount === 0) return "no action";
  return Object.entries(run.outcomes)
    .map(([outcome, count]) => `${count} ${OUTCOME_WORDS[outcome] ?? outcome}`)
    .join(", ");
}

/**
 * Every power run — drills, real outages and the ways back after them — newest first, each linking to its timeline, kept
 * up to date live.
 */
export function PowerRunList({ initial }: { initial: RunsPage }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data } = useQuery({
    queryKey: powerRunsKey,
    queryFn: () => fetchJson<RunsPage>("/api/power/runs"),
    initialData: initial,
    refetchInterval,
  });
  const refresh = useLiveRefresh(powerRunsKey);
  usePowerLiveMessages((message) => {
    if (message.eventId !== null) refresh();
  });
  // A run in the list that changed status (a new run arrives with a power event: the drill's
  // start, the trigger that fired).
  useLiveMessages((message) => {
    if (message.type !== "run" || !message.status) return;
    const listed = data.runs.find((run) => run.id === message.runId);
    if (listed && listed.status !== message.status) refresh();
  });
  if (data.runs.length === 0) {
    return (
      <p className="muted" data-testid="power-runs-none">
        No power run yet. A drill, or a trigger firing, starts one; each is kept here with its
        timeline.
      </p>
    );
  }
  return (
    <table className={`${styles.runs} stack-on-phone`} data-testid="power-runs">
      <thead>
        <tr>
          <th scope="col">Started</th>
          <th scope="col">What</th>
          <th scope="col">Outcome</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {data.runs.map((run) => (
          <tr
            key={run.id}
            data-testid={`power-run-${run.id}`}
            data-origin={run.origin.kind}
            data-kind={run.kind}
            data-status={run.status}
          >
            <td data-label="Started">
              <Link href={`/power/runs?run=${run.id}`} data-testid="power-run-link">
                <time dateTime={run.createdAt} suppressHydrationWarning>
                  {formatDateTime(run.createdAt)}
                </time>
              </Link>
            </td>
            <td data-label="What">{describeOrigin(run.origin)}</td>
            <td data-label="Outcome">
              <PowerRunVerdictLine verdict={run.verdict} testId="power-run-verdict" as="div" />
              {run.finishedAt && (
                <div className="muted small nowrap">
                  after {formatDuration(Date.parse(run.finishedAt) - Date.parse(run.createdAt))}
                </div>
              )}
            </td>
            <td data-label="Actions">{outcomeSummary(run)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
