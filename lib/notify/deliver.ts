import { and, eq, ne } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { notificationDeliveries, notificationTargets } from "@/lib/db/schema";
import { notifyLive } from "@/lib/live/notify";
import { unseal } from "@/lib/secrets/seal";
import { DEFAULT_RETRY_BASE_MS, DELIVERY_MAX_ATTEMPTS, retryDelayMs } from "./backoff";
import { scheduleDeliveryRetry } from "./enqueue";
import { renderRequest } from "./formats";
import { loadMessage } from "./load-message";
import type { NotificationMessage } from "./message";
import { DEFAULT_DELIVERY_TIMEOUT_MS, sendWebhook, type SendOutcome } from "./send";

export type DeliveryOptions = {
  /** Per-request deadline. */
  timeoutMs?: number;
  /** First retry's wait; each next one doubles (lib/notify/backoff.ts). */
  retryBaseMs?: number;
  maxAttempts?: number;
  now?: () => Date;
};

type TargetRow = typeof notificationTargets.$inferSelect;

export type DeliveryResult =
  | { kind: "skipped"; reason: string }
  | { kind: "delivered"; attempts: number }
  | { kind: "failed"; attempts: number; retryAt: Date | null; error: string };

/**
 * Sends a target one message in its format, with its sealed URL and auth header. Shared by the
 * worker's deliveries and the Test button, so a test proves exactly what an event would do.
 */
export async function sendToTarget(
  target: TargetRow,
  message: NotificationMessage,
  timeoutMs: number = DEFAULT_DELIVERY_TIMEOUT_MS,
): Promise<SendOutcome> {
  let request;
  try {
    request = renderRequest(target.format, message, {
      template: target.template,
      templateEscape: target.templateEscape,
      templateContentType: target.templateContentType,
    });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { ok: false, status: null, error: `could not build the message: ${why}` };
  }
  const auth =
    target.authHeaderName && target.sealedAuthHeaderValue
      ? { name: target.authHeaderName, value: unseal(target.sealedAuthHeaderValue) }
      : null;
  return sendWebhook(unseal(target.sealedUrl), request, auth, timeoutMs);
}

/**
 * One attempt of one delivery (the `notify-deliver` job). The outcome is stored, with the next
 * attempt's job when it failed and attempts remain, in one transaction: a worker that dies
 * before it commits leaves the job to graphile-worker's own retry, never a lost delivery.
 */
export async function attemptDelivery(
  db: Database,
  deliveryId: number,
  options: DeliveryOptions = {},
): Promise<DeliveryResult> {
  const now = options.now ?? (() => new Date());
  const [row] = await db
    .select({ delivery: notificationDeliveries, target: notificationTargets })
    .from(notificationDeliveries)
    .innerJoin(notificationTargets, eq(notificationTargets.id, notificationDeliveries.targetId))
    .where(eq(notificationDeliveries.id, deliveryId));
  if (!row) return { kind: "skipped", reason: "the delivery or its target is gone" };
  const { delivery, target } = row;
  if (delivery.state === "delivered" || delivery.state === "acknowledged") {
    return { kind: "skipped", reason: `already ${delivery.state}` };
  }
  const attempts = delivery.attempts + 1;
  const message = await loadMessage(db, delivery);
  const outcome: SendOutcome = !target.enabled
    ? { ok: false, status: null, error: "not sent: the target is disabled" }
    : message === null
      ? { ok: false, status: null, error: "not sent: its event no longer exists" }
      : await sendToTarget(target, message, options.timeoutMs);
  const at = now();
  const maxAttempts = options.maxAttempts ?? DELIVERY_MAX_ATTEMPTS;
  const retryAt =
    !outcome.ok && target.enabled && message !== null && attempts < maxAttempts
      ? new Date(
          at.getTime() + retryDelayMs(attempts, options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS),
        )
      : null;
  const stored = await db.transaction(async (tx) => {
    const updated = await tx
      .update(notificationDeliveries)
      .set({
        attempts,
        lastAttemptAt: at,
        lastStatus: outcome.status,
        lastError: outcome.ok ? null : outcome.error,
        ...(outcome.ok
          ? { state: "delivered" as const, deliveredAt: at, nextAttemptAt: null }
          : { state: "failed" as const, nextAttemptAt: retryAt }),
      })
      .where(
        // An operator who acknowledged while this attempt was sending stopped its retries: a
        // failure must not bring it back. A success is still the truth, and is stored.
        outcome.ok
          ? eq(notificationDeliveries.id, deliveryId)
          : and(
              eq(notificationDeliveries.id, deliveryId),
              ne(notificationDeliveries.state, "acknowledged"),
            ),
      )
      .returning({ id: notificationDeliveries.id });
    if (updated.length === 0) return false;
    if (retryAt) await scheduleDeliveryRetry(tx, deliveryId, target.id, retryAt);
    // Neither a UPS nor an event: every power query refreshes, the notification cards among them.
    await notifyLive(tx, { type: "power", upsId: null, eventId: null });
    return true;
  });
  if (!stored) return { kind: "skipped", reason: "acknowledged while it was being sent" };
  return outcome.ok
    ? { kind: "delivered", attempts }
    : { kind: "failed", attempts, retryAt, error: outcome.error };
}
