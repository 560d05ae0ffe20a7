import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { enqueueNotifications } from "./enqueue";
import { classifyRunEvent, RUN_NAMES, type RunEventFacts } from "./onboarding-events";

type Executor = Pick<Database, "execute">;

/**
 * The engine's one hook (lib/pipeline/engine.ts, where a visit's run events are appended): the
 * event's notifications are queued in the same transaction as the event and the run's change.
 */
export async function notifyRunEvent(
  tx: Executor,
  runId: string,
  eventId: number,
  event: RunEventFacts,
): Promise<void> {
  const hostsLeft = event.pipeline === RUN_NAMES.rotateKey ? await rotationHostsLeft(tx, runId) : 0;
  const classified = classifyRunEvent(event, hostsLeft);
  if (!classified) return;
  await enqueueNotifications(tx, { runEventId: eventId, ...classified });
}

/** Hosts a rotation run could not move to the new key (refused it, or out of reach). */
async function rotationHostsLeft(tx: Executor, runId: string): Promise<number> {
  const result = await tx.execute<{ n: number }>(sql`
    select count(*)::int as n from console_key_rotation_hosts h
    join console_key_rotations r on r.id = h.rotation_id
    where r.run_id = ${runId}::uuid and h.outcome in ('new_key_refused', 'unreachable')`);
  return result.rows[0]?.n ?? 0;
}
