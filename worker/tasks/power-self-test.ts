import type { Task } from "graphile-worker";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { powerSelfTestOccasion } from "@/lib/db/schema";
import { runSelfTest } from "@/lib/power/self-test/run-self-test";

/** The crontab's payload carries only `_cron`; queued ones say why and for whom. */
const ZSelfTestPayload = z
  .object({
    occasion: z.enum(powerSelfTestOccasion.enumValues).default("schedule"),
    requestedBy: z.string().nullable().default(null),
  })
  .loose();

/** Runs the power self-test (lib/power/self-test): scheduled, after arming, at start-up, on a button. */
export function createPowerSelfTestTask(db: Database): Task {
  return async (payload, helpers) => {
    const { occasion, requestedBy } = ZSelfTestPayload.parse(payload ?? {});
    const result = await runSelfTest(db, { occasion, requestedBy });
    helpers.logger.debug(
      `power-self-test (${occasion}): ${result.verdict ?? `skipped — ${result.skippedReason}`}`,
    );
  };
}
