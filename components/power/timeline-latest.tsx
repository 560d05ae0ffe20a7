"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { ShutdownRunView } from "@/lib/power/queries/shutdown-run";
import type { RunTimeline } from "@/lib/power/queries/timeline";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import { RunTimelineView, timelineKey } from "./timeline";

/**
 * The latest shutdown run's timeline on the power page, following the same query as the run
 * panel above it: when a new run starts (a trigger fired, a drill), its timeline takes the place
 * of the last one, live, without a reload.
 */
export function LatestRunTimeline({
  initialShutdown,
  initialTimeline,
}: {
  initialShutdown: ShutdownRunView | null;
  initialTimeline: RunTimeline | null;
}) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data: latest } = useQuery({
    queryKey: powerKeys.shutdownRun,
    queryFn: async () =>
      (await fetchJson<{ shutdown: ShutdownRunView | null }>("/api/power/shutdown-run")).shutdown,
    initialData: initialShutdown,
    refetchInterval,
  });
  const runId = latest?.run.id ?? null;
  const { data: timeline } = useQuery({
    queryKey: runId ? timelineKey(runId) : ["power", "no-run"],
    queryFn: () => fetchJson<RunTimeline>(`/api/power/runs/${encodeURIComponent(runId!)}`),
    enabled: runId !== null && runId !== initialTimeline?.run.id,
  });
  const shown = runId === initialTimeline?.run.id ? initialTimeline : timeline;
  if (!runId) return null;
  return (
    <section
      className="panel"
      aria-labelledby="latest-timeline-heading"
      data-testid="latest-run-timeline"
    >
      <div className="panel-head">
        <h2 id="latest-timeline-heading">Timeline of the latest run</h2>
        <Link href="/power/runs" data-testid="latest-run-timeline-all">
          Every run and drill
        </Link>
      </div>
      {shown ? (
        <RunTimelineView key={shown.run.id} initial={shown} />
      ) : (
        <p className="muted">Reading the timeline…</p>
      )}
    </section>
  );
}
