import type { Database } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { abortRun } from "@/lib/runs/abort-run";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import type { PowerBackPlan } from "@/lib/power/power-back/back-plan";
import { decidePowerBack } from "@/lib/power/power-back/policy";
import {
  outageToBringBack,
  runningPowerBackRuns,
  startPowerBackRun,
} from "@/lib/power/power-back-pipeline/start-power-back";
import { feedFacts, feedsOnBattery } from "@/lib/power/targets/feed-status";

/** A reading older than this says nothing about the mains now. */
const FRESH_MS = 30_000;

/**
 * The monitor's part in the way back (issue 30, items 4 and 5), each supervisor tick:
 *
 * - a new outage wins: a running power-back run whose hosts' feeds read on battery again is
 *   stopped at once (the engine's abort, which interrupts whatever the step waits on; the steps
 *   also ask the feeds before they power anything on). The trigger path then decides afresh:
 *   hosts already back are ordinary targets of the new outage;
 * - the policy (./../power-back/policy.ts) holds for the open outage — every feed of its hosts on
 *   mains for N minutes, charged to X %, runtime for its shutdown again — and no way back was
 *   tried for it yet: one power-back run starts (one per outage; an admin can always try again).
 *
 * `now` is the caller's clock.
 */
export async function watchPowerBack(
  db: Database,
  now: Date,
  log: (line: string) => void,
): Promise<void> {
  for (const run of await runningPowerBackRuns(db)) {
    const plan = run.context.plan as PowerBackPlan | undefined;
    if (!plan) continue;
    const onBattery = await feedsOnBattery(db, plan.feeds, now, FRESH_MS);
    if (onBattery.length === 0) continue;
    const names = onBattery.map((f) => f.name).join(", ");
    try {
      await abortRun(db, { runId: run.id, actor: `power monitor: mains lost again on ${names}` });
      log(`power monitor: mains lost again on ${names}: power-back run ${run.id} stopped`);
    } catch (error) {
      // It ended meanwhile: nothing to stop.
      if (!(error instanceof AppError && error.code === "conflict")) throw error;
    }
  }
  const outage = await outageToBringBack(db, now);
  if (!outage || outage.shutdownRunning || outage.tried) return;
  const settings = await readPowerSettings(db);
  const decision = decidePowerBack({
    feeds: await feedFacts(db, outage.feeds),
    settings: settings.powerBack,
    budgetSeconds: outage.budgetSeconds,
    now,
  });
  if (!decision.holds) return;
  const started = await db.transaction((tx) =>
    startPowerBackRun(tx, { kind: "monitor", why: decision.why }),
  );
  if ("runId" in started)
    log(`power monitor: ${decision.why}: power-back run ${started.runId} started`);
}
