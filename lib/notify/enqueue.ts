import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { SEVERITIES, type Severity } from "./message";

export const NOTIFY_DELIVER_TASK = "notify-deliver";

/** graphile-worker's own retries, for a job that throws (the database gone mid-delivery). */
const JOB_MAX_ATTEMPTS = 25;

export function deliveryJobKey(deliveryId: number): string {
  return `notify:${deliveryId}`;
}

export type NotifiableEvent = {
  kind: string;
  severity: Severity;
} & ({ powerEventId: number; runEventId?: never } | { runEventId: number; powerEventId?: never });

type Executor = Pick<Database, "execute">;

/**
 * One delivery row and one worker job per enabled target that wants the event (its severity at
 * least the target's minimum; its kind listed, its family `ups.*` listed, or no list), in the
 * caller's transaction: an event that commits has its deliveries, one rolled back has none.
 */
export async function enqueueNotifications(tx: Executor, event: NotifiableEvent): Promise<number> {
  const order = sql.raw(`array[${SEVERITIES.map((s) => `'${s}'`).join(",")}]`);
  const result = await tx.execute(sql`
    with queued as (
      insert into notification_deliveries (target_id, power_event_id, run_event_id, kind, severity)
      select t.id, ${event.powerEventId ?? null}::bigint, ${event.runEventId ?? null}::bigint,
        ${event.kind}, ${event.severity}::power_event_severity
      from notification_targets t
      where t.enabled
        and array_position(${order}, ${event.severity}::text)
          >= array_position(${order}, t.min_severity::text)
        and (cardinality(t.event_kinds) = 0
          or ${event.kind} = any(t.event_kinds)
          or split_part(${event.kind}, '.', 1) || '.*' = any(t.event_kinds))
      returning id, target_id
    )
    select graphile_worker.add_job(
      ${NOTIFY_DELIVER_TASK},
      json_build_object('deliveryId', queued.id),
      queue_name => 'notify:' || queued.target_id,
      max_attempts => ${JOB_MAX_ATTEMPTS},
      job_key => 'notify:' || queued.id
    ) from queued`);
  return result.rows.length;
}

/**
 * Schedules the next attempt of a delivery that failed, in the transaction recording it. Each
 * target's jobs share a queue (`notify:<target>`), so a target gets its messages one at a time in
 * the order of their events, and a hanging target holds one worker slot, not all of them.
 */
export async function scheduleDeliveryRetry(
  tx: Executor,
  deliveryId: number,
  targetId: string,
  runAt: Date,
): Promise<void> {
  await tx.execute(sql`
    select graphile_worker.add_job(
      ${NOTIFY_DELIVER_TASK},
      json_build_object('deliveryId', ${deliveryId}::bigint),
      queue_name => ${`notify:${targetId}`},
      run_at => ${runAt.toISOString()}::timestamptz,
      max_attempts => ${JOB_MAX_ATTEMPTS},
      job_key => ${deliveryJobKey(deliveryId)},
      job_key_mode => 'replace'
    )`);
}
