import { desc, isNotNull } from "drizzle-orm";
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
};

/** What the dashboard's self-test card and `GET /api/power/self-test` show. */
export async function readSelfTestOverview(
  db: Pick<Database, "select">,
): Promise<SelfTestOverview> {
  const [[ran], [last]] = await Promise.all([
    db
      .select()
      .from(powerSelfTests)
      .where(isNotNull(powerSelfTests.verdict))
      .orderBy(desc(powerSelfTests.finishedAt))
      .limit(1),
    db.select().from(powerSelfTests).orderBy(desc(powerSelfTests.finishedAt)).limit(1),
  ]);
  const skipped = last && last.verdict === null ? last : null;
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
  };
}
