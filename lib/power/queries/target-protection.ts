import { and, desc, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerShutdownCalls, powerTargets, runs, stepVisits } from "@/lib/db/schema";
import { listPowerTargets, type PowerTargetView } from "@/lib/power/operations/power-targets";
import { verifyProxmoxApi } from "@/lib/steps/onboarding/verify-proxmox-api";
import { judgeShutdownToken, type ShutdownTokenVerdict } from "./shutdown-token-evidence";

export type TargetProtection = PowerTargetView & {
  /** The onboarded host of a PVE node target (its page), null for a backup server. */
  hostId: string | null;
  token: ShutdownTokenVerdict;
};

/**
 * Every protected target with what protects it — feeds and policy, stage, whether it runs the
 * console, its exact request — and whether its token can shut it down as last known: the host's
 * last VerifyProxmoxApi (which checks Sys.PowerMgmt on the node), or a newer real call's answer.
 */
export async function listTargetProtection(db: Database): Promise<TargetProtection[]> {
  const targets = await listPowerTargets(db);
  if (targets.length === 0) return [];
  const targetIds = targets.map((target) => target.id);

  const [hostIds, verifications, calls] = await Promise.all([
    db
      .select({ id: powerTargets.id, hostId: powerTargets.hostId })
      .from(powerTargets)
      .where(inArray(powerTargets.id, targetIds)),
    db
      .selectDistinctOn([runs.hostId], {
        hostId: runs.hostId,
        outcome: stepVisits.outcome,
        detail: stepVisits.detail,
        at: stepVisits.finishedAt,
      })
      .from(stepVisits)
      .innerJoin(runs, eq(runs.id, stepVisits.runId))
      .innerJoin(powerTargets, eq(powerTargets.hostId, runs.hostId))
      .where(
        and(
          eq(stepVisits.step, verifyProxmoxApi.name),
          inArray(stepVisits.outcome, ["advance", "fail"]),
        ),
      )
      .orderBy(runs.hostId, desc(stepVisits.id)),
    db
      .selectDistinctOn([powerShutdownCalls.targetId], {
        targetId: powerShutdownCalls.targetId,
        state: powerShutdownCalls.state,
        detail: powerShutdownCalls.detail,
        at: sql<Date>`coalesce(${powerShutdownCalls.finishedAt}, ${powerShutdownCalls.startedAt})`.mapWith(
          (value: string | Date) => new Date(value),
        ),
      })
      .from(powerShutdownCalls)
      .where(
        and(
          inArray(powerShutdownCalls.targetId, targetIds),
          // A dry-run row sent nothing and a call still going out has no answer: neither tells.
          inArray(powerShutdownCalls.state, ["sent", "failed", "unknown"]),
        ),
      )
      .orderBy(powerShutdownCalls.targetId, desc(powerShutdownCalls.id)),
  ]);

  return targets.map((target): TargetProtection => {
    const hostId = hostIds.find((row) => row.id === target.id)?.hostId ?? null;
    const verification = hostId ? verifications.find((v) => v.hostId === hostId) : undefined;
    const call = calls.find((c) => c.targetId === target.id);
    return {
      ...target,
      hostId,
      token: judgeShutdownToken({
        kind: target.kind,
        problem: target.problem,
        nodeName: target.nodeName,
        verification: verification
          ? {
              passed: verification.outcome === "advance",
              detail: verification.detail,
              at: verification.at,
            }
          : null,
        lastCall: call
          ? { state: call.state as "sent" | "failed" | "unknown", detail: call.detail, at: call.at }
          : null,
      }),
    };
  });
}
