import { and, desc, eq, isNotNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerSelfTests } from "@/lib/db/schema";
import type { SelfTestCheck, SelfTestVerdict } from "./verdict";

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
   * Null when the latest run is that run, or no run has tested a webhook yet.
   */
  lastWebhookTest: {
    finishedAt: string;
    requestedBy: string | null;
    checks: SelfTestCheck[];
  } | null;
};

/** The key prefix of check-webhooks.ts's checks. */
const WEBHOOK_CHECK = "webhook:";

/** What the dashboard's self-test card and `GET /api/power/self-test` show. */
export async function readSelfTestOverview(
  db: Pick<Database, "select">,
): Promise<SelfTestOverview> {
  const [[ran], [last], [byHand]] = await Promise.all([
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
  ]);
  const skipped = last && last.verdict === null ? last : null;
  const webhookChecks = byHand?.checks.filter((c) => c.key.startsWith(WEBHOOK_CHECK)) ?? [];
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
  };
}
