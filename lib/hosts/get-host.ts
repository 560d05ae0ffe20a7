import type { Database } from "@/lib/db/client";
import { getRun, type RunDetail } from "@/lib/runs/get-run";
import { pipelines } from "@/lib/steps/pipelines";
import { listHosts, type HostSummary } from "./list-hosts";

export type HostDetail = HostSummary & { latestRun: RunDetail | null };

export async function getHost(db: Database, hostId: string): Promise<HostDetail | null> {
  const [host] = await listHosts(db, { hostId });
  if (!host) return null;
  const latestRun = host.run ? await getRun(db, host.run.id, pipelines) : null;
  return { ...host, latestRun };
}
