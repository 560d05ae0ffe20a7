import type { Database } from "@/lib/db/client";
import { events } from "@/lib/db/schema";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import { AppError } from "@/lib/errors";
import { startRun } from "@/lib/runs/start-run";
import { onboardHostPipeline } from "@/lib/steps/onboarding";
import { latestRun, lockHost, retiredHostError } from "@/lib/host-access/host-guards";

/**
 * Starts a new onboarding run for a host that already has one (after a reinstall, after the
 * catalog gained a template, or to re-check a host). Every step checks its goal first, so on a
 * healthy host the run changes nothing and its log says so.
 *
 * Refused while the latest run is still running: two runs working the same host at once would
 * race each other's apt jobs, token rotation and template build. The host row is locked first,
 * so two concurrent requests cannot both see "no running run" and both start one.
 */
export async function reonboardHost(
  db: Database,
  input: { hostId: string; actor: string },
): Promise<{ runId: string }> {
  return db.transaction(async (tx) => {
    const host = await lockHost(tx, input.hostId);
    if (host.retiredAt) throw retiredHostError(host.name);
    const latest = await latestRun(tx, host.id);
    if (latest?.status === "running") {
      throw new AppError(
        "conflict",
        `${host.name} is being onboarded right now (at ${latest.currentStep}); wait for that run to end, or abort it, before starting another.`,
      );
    }
    const runId = await startRun(tx, {
      pipeline: onboardHostPipeline,
      hostId: host.id,
      actor: input.actor,
    });
    await tx.insert(events).values({
      hostId: host.id,
      runId,
      kind: "host.reonboarded",
      actor: input.actor,
      message: latest
        ? `onboarding of ${host.name} started again; the previous run ${latest.id} ${latest.status}`
        : `onboarding of ${host.name} started`,
    });
    return { runId };
  });
}

/**
 * reonboardHost under the audit log's `host.reonboard`. Shared by the server action and
 * `POST /api/hosts/:id/runs`, so both doors leave the same entry.
 */
export async function auditedHostReonboard(
  db: Database,
  actor: AuditActor,
  hostId: string,
): Promise<{ runId: string }> {
  return audited(db, { actor, action: "host.reonboard", target: `host:${hostId}` }, () =>
    reonboardHost(db, { hostId, actor: actor.name }),
  );
}
