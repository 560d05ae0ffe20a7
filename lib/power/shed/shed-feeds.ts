import { eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { upsDevices, upsMonitorState } from "@/lib/db/schema";
import { stateOfRow } from "@/lib/power/triggers/monitor-state-store";
import type { ShedFeed } from "./shed-selection";

/** A reading older than this says nothing about now: the monitor stopped reading. */
export const SHED_READING_FRESH_MS = 30_000;

/** The monitor's persisted word on each of these UPSes, as the shed decision reads it. */
export async function shedFeeds(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
  now: Date,
): Promise<Map<string, ShedFeed>> {
  if (upsIds.length === 0) return new Map();
  const rows = await db
    .select({ id: upsDevices.id, name: upsDevices.name, row: upsMonitorState })
    .from(upsDevices)
    .leftJoin(upsMonitorState, eq(upsMonitorState.upsId, upsDevices.id))
    .where(inArray(upsDevices.id, [...upsIds]));
  return new Map(
    rows.map(({ id, name, row }) => {
      const state = stateOfRow(row);
      const readAt = row?.lastReadingAt ?? null;
      return [
        id,
        {
          upsId: id,
          name,
          fresh:
            state.reachable === true &&
            readAt !== null &&
            now.getTime() - readAt.getTime() <= SHED_READING_FRESH_MS,
          onBattery: state.lastReading?.onBattery ?? null,
          onBatteryMs: state.durations.onBatteryMs,
          onBatterySince: state.onBatterySince,
          latched: state.latch !== null && state.latch.dormant !== true,
        },
      ];
    }),
  );
}
