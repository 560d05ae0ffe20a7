import { asc, desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { hosts, powerShutdownCalls, powerTargets, runs } from "@/lib/db/schema";
import { getRun, type RunDetail } from "@/lib/runs/get-run";
import { POWER_SHUTDOWN, powerShutdownPipeline } from "@/lib/power/shutdown/pipeline";

export type ShutdownCallView = {
  targetId: string;
  targetName: string;
  state: "would_send" | "sending" | "sent" | "failed" | "unknown";
  /** The exact request, secret masked. */
  request: string;
  detail: string | null;
  startedAt: string;
  finishedAt: string | null;
};

export type ShutdownRunView = { run: RunDetail; calls: ShutdownCallView[] };

/**
 * The latest power-shutdown run (the one running now, or the last one) with what it sent or
 * would have sent to each target, in the order it did; null when there never was one.
 */
export async function latestShutdownRun(db: Database): Promise<ShutdownRunView | null> {
  const [latest] = await db
    .select({ id: runs.id })
    .from(runs)
    .where(eq(runs.pipeline, POWER_SHUTDOWN))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(1);
  if (!latest) return null;
  const [run, calls] = await Promise.all([
    getRun(db, latest.id, { [POWER_SHUTDOWN]: powerShutdownPipeline }),
    db
      .select({ call: powerShutdownCalls, hostName: hosts.name, pbsName: powerTargets.name })
      .from(powerShutdownCalls)
      .innerJoin(powerTargets, eq(powerTargets.id, powerShutdownCalls.targetId))
      .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
      .where(eq(powerShutdownCalls.runId, latest.id))
      .orderBy(asc(powerShutdownCalls.id)),
  ]);
  if (!run) return null;
  return {
    run,
    calls: calls.map(({ call, hostName, pbsName }) => ({
      targetId: call.targetId,
      targetName: hostName ?? pbsName ?? call.targetId,
      state: call.state,
      request: call.request,
      detail: call.detail,
      startedAt: call.startedAt.toISOString(),
      finishedAt: call.finishedAt?.toISOString() ?? null,
    })),
  };
}
