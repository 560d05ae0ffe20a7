import type { Database } from "@/lib/db/client";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { getRun, type RunDetail } from "@/lib/runs/get-run";
import { listHostRuns, type HostRunSummary } from "./list-host-runs";
import { listHosts, type HostSummary } from "./list-hosts";

export type HostDetail = HostSummary & {
  latestRun: RunDetail | null;
  /** Every run of the host, newest first: the page's history follows the live stream with it. */
  runs: HostRunSummary[];
};

/** `pipelines`: every pipeline by name (lib/registry/pipelines.ts), to list the run's steps. */
export async function getHost(
  db: Database,
  hostId: string,
  pipelines: Readonly<Record<string, AnyPipeline>>,
): Promise<HostDetail | null> {
  const [host] = await listHosts(db, { hostId });
  if (!host) return null;
  const [latestRun, runs] = await Promise.all([
    host.run ? getRun(db, host.run.id, pipelines) : null,
    listHostRuns(db, host.id),
  ]);
  return { ...host, latestRun, runs };
}
