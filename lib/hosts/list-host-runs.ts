import { desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { runOutcome, type RunOutcome } from "@/lib/pipeline/abort-reason";

export type HostRunSummary = {
  id: string;
  pipeline: string;
  status: "running" | "succeeded" | "failed";
  /** The status as a person reads it: an operator's Abort is `aborted`, never `failed`. */
  outcome: RunOutcome;
  failedStep: string | null;
  failureReason: string | null;
  createdAt: string;
  finishedAt: string | null;
};

/**
 * Every run of one host, newest first: the host page's history (a retired host's onboarding
 * runs stay readable there). Runs per host are few — one per (re-)onboarding or decommission.
 */
export async function listHostRuns(db: Database, hostId: string): Promise<HostRunSummary[]> {
  const rows = await db
    .select({
      id: runs.id,
      pipeline: runs.pipeline,
      status: runs.status,
      failedStep: runs.failedStep,
      failureReason: runs.failureReason,
      createdAt: runs.createdAt,
      finishedAt: runs.finishedAt,
    })
    .from(runs)
    .where(eq(runs.hostId, hostId))
    .orderBy(desc(runs.createdAt));
  return rows.map((row) => ({
    ...row,
    outcome: runOutcome(row),
    createdAt: row.createdAt.toISOString(),
    finishedAt: row.finishedAt?.toISOString() ?? null,
  }));
}
