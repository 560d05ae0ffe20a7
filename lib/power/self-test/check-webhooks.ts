import type { Database } from "@/lib/db/client";
import { safeErrorSummary } from "@/lib/errors";
import { listTargets } from "@/lib/notify/targets";
import { testTarget } from "@/lib/notify/test-target";
import { webhookCheckKey, type SelfTestCheck } from "./verdict";

const SELF_TEST_ACTOR = { userId: null, name: "self-test" };

/**
 * Each enabled webhook target gets a real test message (lib/notify's Test button), and its answer
 * is the verdict. Only on the button: an hourly test message in every chat channel would teach
 * people to ignore the channel, and one at arming would land in the middle of what arming is for
 * (the outage's own notifications).
 */
export async function checkWebhooks(
  db: Database,
  options: { timeoutMs: number },
): Promise<SelfTestCheck[]> {
  const targets = (await listTargets(db)).filter((t) => t.enabled);
  return Promise.all(
    targets.map(async (target): Promise<SelfTestCheck> => {
      const base = {
        key: webhookCheckKey(target.id),
        title: `${target.name}: the webhook delivers`,
        subject: target.name,
      };
      try {
        const outcome = await testTarget(db, { id: target.id }, SELF_TEST_ACTOR, options.timeoutMs);
        if (outcome.ok) {
          return {
            ...base,
            verdict: "ok",
            reason: `${target.urlOrigin} took a test message (HTTP ${outcome.status}).`,
            next: null,
          };
        }
        return {
          ...base,
          verdict: "failed",
          reason: `${target.urlOrigin} did not take a test message: ${outcome.error}. Power events would not reach it.`,
          next: "Check the URL, the auth header and the service (its card on Power → Notifications shows the answer), then run the self-test again.",
        };
      } catch (error) {
        return {
          ...base,
          verdict: "could-not-check",
          reason: `The test message could not be sent: ${safeErrorSummary(error)}.`,
          next: "Run the self-test again; if it persists, use the target's Test button.",
        };
      }
    }),
  );
}
