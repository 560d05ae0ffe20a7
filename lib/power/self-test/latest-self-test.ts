import { and, desc, eq, inArray, isNotNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { auditLog, notificationTargets, powerSelfTests } from "@/lib/db/schema";
import { webhookCheckKey, type SelfTestCheck, type SelfTestVerdict } from "./verdict";

export type SelfTestView = {
  id: string;
  occasion: string;
  requestedBy: string | null;
  startedAt: string;
  finishedAt: string;
  verdict: SelfTestVerdict;
  checks: SelfTestCheck[];
};

export type SelfTestOverview = {
  /** The last self-test that ran; null: none yet. */
  latest: SelfTestView | null;
  /** A self-test skipped after it (an outage), with why; null when none was. */
  skippedSince: { at: string; occasion: string; reason: string } | null;
  /**
   * The webhook checks of the last run that sent test messages (only the button does), when
   * the latest run is another one: the hourly run must not hide a webhook that failed then.
   * Only the targets that still exist and are enabled. Null when the latest run is that run, or
   * no run by hand has tested one of them.
   */
  lastWebhookTest: {
    finishedAt: string;
    requestedBy: string | null;
    checks: SelfTestCheck[];
  } | null;
  /**
   * The last change to what the self-test checks (UPS devices, targets, settings, a cluster's
   * policy, notification targets, a host's connection), from the audit log: a result older than
   * it no longer describes the configuration. Null when there was none.
   */
  lastChange: { at: string; action: string; by: string } | null;
};

/** Audited changes that alter what a self-test would find. */
export const SELF_TEST_INPUTS = [
  "power.ups_create",
  "power.ups_update",
  "power.ups_delete",
  "power.target_create",
  "power.target_update",
  "power.target_delete",
  "power.settings_update",
  "power.cluster_policy",
  "notify.target_create",
  "notify.target_update",
  "notify.target_delete",
  "host.edit",
  "host.decommission",
  "host.delete",
] as const;

/** What the dashboard's self-test card and `GET /api/power/self-test` show. */
export async function readSelfTestOverview(
  db: Pick<Database, "select">,
): Promise<SelfTestOverview> {
  const [[ran], [last], [byHand], enabledTargets, [change]] = await Promise.all([
    db
      .select()
      .from(powerSelfTests)
      .where(isNotNull(powerSelfTests.verdict))
      .orderBy(desc(powerSelfTests.finishedAt))
      .limit(1),
    db.select().from(powerSelfTests).orderBy(desc(powerSelfTests.finishedAt)).limit(1),
    db
      .select()
      .from(powerSelfTests)
      .where(and(isNotNull(powerSelfTests.verdict), eq(powerSelfTests.occasion, "button")))
      .orderBy(desc(powerSelfTests.finishedAt))
      .limit(1),
    db
      .select({ id: notificationTargets.id })
      .from(notificationTargets)
      .where(eq(notificationTargets.enabled, true)),
    db
      .select({ at: auditLog.at, action: auditLog.action, by: auditLog.actorName })
      .from(auditLog)
      .where(and(inArray(auditLog.action, SELF_TEST_INPUTS), eq(auditLog.outcome, "success")))
      .orderBy(desc(auditLog.at))
      .limit(1),
  ]);
  const skipped = last && last.verdict === null ? last : null;
  // Targets that still exist and are on: a deleted or disabled one's old verdict tells nothing.
  const current = new Set(enabledTargets.map((t) => webhookCheckKey(t.id)));
  const webhookChecks = byHand?.checks.filter((c) => current.has(c.key)) ?? [];
  return {
    latest: ran
      ? {
          id: ran.id,
          occasion: ran.occasion,
          requestedBy: ran.requestedBy,
          startedAt: ran.startedAt.toISOString(),
          finishedAt: ran.finishedAt.toISOString(),
          verdict: ran.verdict!,
          checks: ran.checks,
        }
      : null,
    skippedSince: skipped
      ? {
          at: skipped.finishedAt.toISOString(),
          occasion: skipped.occasion,
          reason: skipped.skippedReason ?? "",
        }
      : null,
    lastWebhookTest:
      byHand && byHand.id !== ran?.id && webhookChecks.length > 0
        ? {
            finishedAt: byHand.finishedAt.toISOString(),
            requestedBy: byHand.requestedBy,
            checks: webhookChecks,
          }
        : null,
    lastChange: change
      ? { at: change.at.toISOString(), action: change.action, by: change.by }
      : null,
  };
}
