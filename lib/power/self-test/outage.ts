import { and, eq, inArray } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { readMonitorStates } from "../triggers/monitor-state-store";
import { POWER_BACK } from "../power-back-pipeline/pipeline";
import { POWER_SHUTDOWN } from "../shutdown-pipeline/pipeline";

/**
 * Why a self-test must not run now, or null. During an outage its probes would compete with the
 * shutdown for the targets' APIs and the UPS connections, and its verdicts would be about a
 * fleet that is going down on purpose: a UPS on battery or latched, or a shutdown run going —
 * or coming back (a power-back run: hosts booting would read as failures).
 */
export async function outageInProgress(db: Pick<Database, "select">): Promise<string | null> {
  const [states, running] = await Promise.all([
    readMonitorStates(db),
    db
      .select({ pipeline: runs.pipeline })
      .from(runs)
      .where(and(inArray(runs.pipeline, [POWER_SHUTDOWN, POWER_BACK]), eq(runs.status, "running"))),
  ]);
  const reasons: string[] = [];
  for (const { name, state } of states) {
    if (state.latch) reasons.push(`UPS ${name}'s trigger is latched (${state.latch.reason})`);
    else if (state.onBatterySince || state.lastReading?.onBattery) {
      reasons.push(`UPS ${name} is on battery`);
    }
  }
  if (running.some((r) => r.pipeline === POWER_SHUTDOWN)) {
    reasons.push("a power-shutdown run is in progress");
  }
  if (running.some((r) => r.pipeline === POWER_BACK)) {
    reasons.push("a power-back run is bringing the fleet back");
  }
  return reasons.length === 0
    ? null
    : `a power outage is in progress: ${reasons.join("; ")}. The self-test does not run during an outage; it runs again once power is back and the latch is released.`;
}
