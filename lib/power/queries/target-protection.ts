import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import {
  hosts,
  powerShutdownCalls,
  powerTargetFeeds,
  powerTargets,
  runs,
  stepVisits,
  upsDevices,
} from "@/lib/db/schema";
import { verifyProxmoxApi } from "@/lib/steps/host/verify-proxmox-api";
import { judgeShutdownToken, type ShutdownTokenVerdict } from "./shutdown-token-evidence";

export type TargetProtection = {
  id: string;
  kind: "pve-node" | "pbs";
  name: string;
  /** `address:port` the shutdown call goes to. */
  endpoint: string;
  hostId: string | null;
  nodeName: string | null;
  feedPolicy: "all" | "any";
  feeds: { upsId: string; name: string }[];
  stage: number;
  runsConsole: boolean;
  enabled: boolean;
  token: ShutdownTokenVerdict;
};

/**
 * Every protected target with what protects it: its feeds and policy, its stage, whether it runs
 * the console, and whether its token can shut it down as last known. Ordered as configured
 * (stage, then name); the exact sequence is the plan's to say.
 */
export async function listTargetProtection(db: Database): Promise<TargetProtection[]> {
  const targets = await db
    .select({ target: powerTargets, host: hosts })
    .from(powerTargets)
    .leftJoin(hosts, eq(hosts.id, powerTargets.hostId))
    .orderBy(asc(powerTargets.stage), asc(sql`coalesce(${hosts.name}, ${powerTargets.name})`));
  if (targets.length === 0) return [];
  const targetIds = targets.map(({ target }) => target.id);
  const hostIds = targets.flatMap(({ target }) => (target.hostId ? [target.hostId] : []));

  const [feeds, verifications, calls] = await Promise.all([
    db
      .select({ targetId: powerTargetFeeds.targetId, upsId: upsDevices.id, name: upsDevices.name })
      .from(powerTargetFeeds)
      .innerJoin(upsDevices, eq(upsDevices.id, powerTargetFeeds.upsId))
      .where(inArray(powerTargetFeeds.targetId, targetIds))
      .orderBy(asc(upsDevices.name)),
    hostIds.length === 0
      ? []
      : db
          .selectDistinctOn([runs.hostId], {
            hostId: runs.hostId,
            outcome: stepVisits.outcome,
            detail: stepVisits.detail,
            at: stepVisits.finishedAt,
          })
          .from(stepVisits)
          .innerJoin(runs, eq(runs.id, stepVisits.runId))
          .where(
            and(
              inArray(runs.hostId, hostIds),
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
          // A dry-run row sent nothing; a call still going out has no answer yet.
          inArray(powerShutdownCalls.state, ["sent", "failed", "unknown"]),
        ),
      )
      .orderBy(powerShutdownCalls.targetId, desc(powerShutdownCalls.id)),
  ]);

  return targets.map(({ target, host }): TargetProtection => {
    const verification = host ? verifications.find((v) => v.hostId === host.id) : undefined;
    const call = calls.find((c) => c.targetId === target.id);
    const hasToken = host
      ? Boolean(host.apiTokenId && host.apiTokenCredentialId && host.apiCertSha256 && host.nodeName)
      : Boolean(target.tokenId && target.tokenCredentialId && target.certSha256);
    return {
      id: target.id,
      kind: target.kind,
      name: host?.name ?? target.name ?? target.id,
      endpoint: host ? `${host.address}:${host.apiPort}` : `${target.address}:${target.port}`,
      hostId: target.hostId,
      nodeName: host?.nodeName ?? null,
      feedPolicy: target.feedPolicy,
      feeds: feeds
        .filter((f) => f.targetId === target.id)
        .map(({ upsId, name }) => ({ upsId, name })),
      stage: target.stage,
      runsConsole: target.runsConsole,
      enabled: target.enabled,
      token: judgeShutdownToken({
        kind: target.kind,
        hasToken,
        nodeName: host?.nodeName ?? null,
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
