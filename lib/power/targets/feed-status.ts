import { inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { upsMonitorState } from "@/lib/db/schema";

/**
 * Which UPSes are on mains right now by a recent reliable reading. Anything else — on battery,
 * unreachable, a reading older than `maxAgeMs` (no monitor is reading it) — is not "on mains":
 * a UPS the console cannot ask might still be on battery.
 */
export async function feedsOnMains(
  db: Pick<Database, "select">,
  upsIds: readonly string[],
  now: Date,
  maxAgeMs: number,
): Promise<Map<string, boolean>> {
  if (upsIds.length === 0) return new Map();
  const rows = await db
    .select({
      upsId: upsMonitorState.upsId,
      reachable: upsMonitorState.reachable,
      lastReading: upsMonitorState.lastReading,
      lastReadingAt: upsMonitorState.lastReadingAt,
    })
    .from(upsMonitorState)
    .where(inArray(upsMonitorState.upsId, [...upsIds]));
  return new Map(
    rows.map((row) => [
      row.upsId,
      row.reachable === true &&
        row.lastReading?.onBattery === false &&
        row.lastReadingAt !== null &&
        now.getTime() - row.lastReadingAt.getTime() <= maxAgeMs,
    ]),
  );
}
