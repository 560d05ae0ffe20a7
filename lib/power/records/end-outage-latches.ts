import { eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { recordPowerEvents } from "./power-events";

/**
 * The way back ends the outage it brings the fleet back from, and so does a host powered on by
 * hand: each of its feeds' latches that mains put to sleep (dormant) is released, so a loss of
 * mains from now on is a **new** outage.
 *
 * Why: a dormant latch that fires again keeps its time, and its time names the outage — what
 * was called in it is not called again (lib/power/monitor/start-due-shutdowns.ts). After a way
 * back, that would leave a host just powered on running into the next hard power loss, covered
 * by a shutdown call of the outage before. Released, the next trigger latches afresh and every
 * target is due again: a host already back is shut down, one still off answers no probe and is
 * seen down.
 *
 * A latch that is awake (its UPS on battery now) is left alone: that outage is going on, and the
 * way back stops on its own when it sees the feed. The monitor adopts the release with its next
 * reading, as it does an admin's (it reads the row under the same lock).
 */
export async function endOutageLatches(
  db: Pick<Database, "transaction">,
  feeds: readonly string[],
  by: { runId: string } | { hostName: string; actor: string },
): Promise<string[]> {
  if (feeds.length === 0) return [];
  return db.transaction(async (tx) => {
    const rows = await tx
      .select({
        upsId: upsMonitorState.upsId,
        name: upsDevices.name,
        latchedAt: upsMonitorState.latchedAt,
        dormant: upsMonitorState.latchDormant,
        stages: upsMonitorState.consolidateLatches,
      })
      .from(upsMonitorState)
      .innerJoin(upsDevices, eq(upsDevices.id, upsMonitorState.upsId))
      .where(inArray(upsMonitorState.upsId, [...feeds]))
      .orderBy(upsDevices.name)
      .for("update", { of: upsMonitorState });
    const asleep = rows.filter(
      (r) =>
        (r.latchedAt === null || r.dormant) &&
        Object.values(r.stages ?? {}).every((s) => s.dormant === true) &&
        (r.latchedAt !== null || Object.keys(r.stages ?? {}).length > 0),
    );
    if (asleep.length === 0) return [];
    await tx
      .update(upsMonitorState)
      .set({
        latchedTrigger: null,
        latchedAt: null,
        latchedReason: null,
        latchedReading: null,
        latchDormant: false,
        consolidateLatches: {},
      })
      .where(
        inArray(
          upsMonitorState.upsId,
          asleep.map((r) => r.upsId),
        ),
      );
    await recordPowerEvents(
      tx,
      asleep.map((r) => ({
        severity: "info" as const,
        kind: "latch.released" as const,
        upsId: r.upsId,
        runId: "runId" in by ? by.runId : null,
        message: `${r.name}: latch released by ${"runId" in by ? "the way back" : `${by.actor}'s power-on of ${by.hostName}`}${r.latchedAt ? ` (it fired ${r.latchedAt.toISOString()})` : ""} — the outage is over; a loss of mains from now on is a new outage, and every host that is back is shut down again`,
      })),
    );
    return asleep.map((r) => r.name);
  });
}
