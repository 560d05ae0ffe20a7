import { eq } from "drizzle-orm";
import type { z } from "zod";
import { audited, type AuditActor } from "@/lib/audit/record-audit";
import type { Database } from "@/lib/db/client";
import { powerEvents } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { notifyLive } from "@/lib/live/notify";
import { ZAcknowledgePowerEvent } from "../config/schemas";

export type AcknowledgedEvent = { eventId: number; acknowledgedAt: string; acknowledgedBy: string };

/**
 * An operator acknowledges an alarm: who and when stay on the event. Acknowledging twice keeps
 * the first acknowledgement (and says who gave it).
 */
export async function acknowledgePowerEvent(
  db: Database,
  input: z.input<typeof ZAcknowledgePowerEvent>,
  actor: AuditActor,
): Promise<AcknowledgedEvent> {
  const { eventId } = ZAcknowledgePowerEvent.parse(input);
  return audited(
    db,
    { actor, action: "power.event_acknowledge", target: `power_event:${eventId}` },
    () =>
      db.transaction(async (tx) => {
        const [event] = await tx
          .select()
          .from(powerEvents)
          .where(eq(powerEvents.id, eventId))
          .for("update");
        if (!event) throw new AppError("not_found", `Power event ${eventId} does not exist.`);
        if (event.acknowledgedAt && event.acknowledgedBy) {
          return {
            eventId,
            acknowledgedAt: event.acknowledgedAt.toISOString(),
            acknowledgedBy: event.acknowledgedBy,
          };
        }
        const acknowledgedAt = new Date();
        await tx
          .update(powerEvents)
          .set({ acknowledgedAt, acknowledgedBy: actor.name })
          .where(eq(powerEvents.id, eventId));
        await notifyLive(tx, { type: "power", upsId: event.upsId, eventId });
        return {
          eventId,
          acknowledgedAt: acknowledgedAt.toISOString(),
          acknowledgedBy: actor.name,
        };
      }),
  );
}
