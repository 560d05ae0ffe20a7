import type { Task } from "graphile-worker";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { attemptDelivery, type DeliveryOptions } from "@/lib/notify/deliver";

const ZNotifyDeliverPayload = z.object({ deliveryId: z.number().int().positive() });

/**
 * One attempt of one notification delivery. A failed attempt is not a failed job: the attempt
 * is recorded and the next one scheduled with its backoff (lib/notify/deliver.ts); the job only
 * throws when it could not record anything, and graphile-worker retries it then.
 */
export function createNotifyDeliverTask(db: Database, options: DeliveryOptions = {}): Task {
  return async (payload, helpers) => {
    const { deliveryId } = ZNotifyDeliverPayload.parse(payload);
    const result = await attemptDelivery(db, deliveryId, options);
    helpers.logger.debug(`notify-deliver ${deliveryId}: ${result.kind}`);
  };
}
