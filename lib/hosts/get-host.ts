import type { Database } from "@/lib/db/client";
import type { AnyPipeline } from "@/lib/pipeline/step";
import { getRun, type RunDetail } from "@/lib/runs/get-run";
import { listHosts, type HostSummary } from "./list-hosts";

export type HostDetail = HostSummary & { latestRun: RunDetail | null };

/** `pipelines`: every pipeline by name (lib/registry/pipelines.ts), to list the run's steps. */
export async function getHost(
  db: Database,
  hostId: string,
  pipelines: Readonly<Record<string, AnyPipeline>>,
): Promise<HostDetail | null> {
  const [host] = await listHosts(db, { hostId });
  if (!host) return null;
  const latestRun = host.run ? await getRun(db, host.run.id, pipelines) : null;
  return { ...host, latestRun };
}
