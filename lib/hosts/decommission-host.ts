import type { Database } from "@/lib/db/client";
import { eq } from "drizzle-orm";
import { events, hosts } from "@/lib/db/schema";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import { AppError } from "@/lib/errors";
import { startRun } from "@/lib/runs/start-run";
import { DECOMMISSION_HOST, decommissionHostPipeline } from "@/lib/steps/onboarding/decommission";
import { latestRun, lockHost } from "@/lib/host-access/host-guards";
import { leaveClusterRefusal } from "@/lib/steps/onboarding/decommission/leave-cluster";

/**
 * Starts the decommission pipeline for a host (lib/steps/onboarding/decommission): abort any running
 * run, take a cluster member out of its cluster, remove the console's API token and SSH key from the host (best effort, each result on
 * the host page), mark it retired. Refused for a retired host and while a decommission is
 * already running; a running onboarding is not a refusal — aborting it is the first step.
 * The host row is locked, so two requests cannot start two decommissions.
 */
export async function decommissionHost(
  db: Database,
  input: { hostId: string; actor: string },
): Promise<{ runId: string; abortsRunId: string | null }> {
  // A member of a cluster the console made that may not leave it (guests, quorum) is refused
  // here, before any run: a refused decommission leaves the host as it was (state, power's view).
  // Asked outside the row lock (it is SSH to a member); LeaveCluster asks again before it acts.
  const [row] = await db.select().from(hosts).where(eq(hosts.id, input.hostId));
  if (row && !row.retiredAt && row.clusterName) {
    const refused = await leaveClusterRefusal(db, row);
    if (refused) throw new AppError("conflict", `${row.name} cannot leave its cluster: ${refused}`);
  }
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, input.hostId);
    if (host.retiredAt) {
      throw new AppError(
        "conflict",
        `${host.name} was already retired on ${host.retiredAt.toISOString()}; an admin can delete it from the host page.`,
      );
    }
    const latest = await latestRun(tx, host.id);
    if (latest?.status === "running" && latest.pipeline === DECOMMISSION_HOST) {
      throw new AppError(
        "conflict",
        `${host.name} is being decommissioned already (run ${latest.id}); follow it on the host page.`,
      );
    }
    const runId = await startRun(tx, {
      pipeline: decommissionHostPipeline,
      hostId: host.id,
      actor: input.actor,
    });
    const abortsRunId = latest?.status === "running" ? latest.id : null;
    await tx.insert(events).values({
      hostId: host.id,
      runId,
      kind: "host.decommission_started",
      actor: input.actor,
      message:
        `decommissioning of ${host.name} started` +
        (abortsRunId ? `; run ${abortsRunId} will be aborted first` : ""),
    });
    return { runId, abortsRunId };
  });
}

/**
 * decommissionHost under the audit log's `host.decommission`. Shared by the server action and
 * `POST /api/hosts/:id/decommission`, so both doors leave the same entry.
 */
export async function auditedHostDecommission(
  db: Database,
  actor: AuditActor,
  hostId: string,
): Promise<{ runId: string; abortsRunId: string | null }> {
  return audited(db, { actor, action: "host.decommission", target: `host:${hostId}` }, () =>
    decommissionHost(db, { hostId, actor: actor.name }),
  );
}
