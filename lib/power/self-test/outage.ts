import { and, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { readMonitorStates } from "../triggers/monitor-state-store";
import { POWER_SHUTDOWN } from "../shutdown-pipeline/pipeline";

/**
 * Why a self-test must not run now, or null. During an outage its probes would compete with the
 * shutdown for the targets' APIs and the UPS connections, and its verdicts would be about a
 * fleet that is going down on purpose: a UPS on battery or latched, or a shutdown run going.
 */
export async function outageInProgress(db: Pick<Database, "select">): Promise<string | null> {
  const [states, running] = await Promise.all([
    readMonitorStates(db),
    db
      .select({ id: runs.id })
      .from(runs)
      .where(and(eq(runs.pipeline, POWER_SHUTDOWN), eq(runs.status, "running")))
      .limit(1),
  ]);
  const reasons: string[] = [];
  for (const { name, state } of states) {
    if (state.latch) reasons.push(`UPS ${name}'s trigger is latched (${state.latch.reason})`);
    else if (state.onBatterySince || state.lastReading?.onBattery) {
      reasons.push(`UPS ${name} is on battery`);
    }
  }
  if (running.length > 0) reasons.push("a power-shutdown run is in progress");
  return reasons.length === 0
    ? null
    : `a power outage is in progress: ${reasons.join("; ")}. The self-test does not run during an outage; it runs again once power is back and the latch is released.`;
}
