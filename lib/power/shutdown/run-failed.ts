import { and, desc, eq } from "drizzle-orm";
import type { Transaction } from "@/lib/db/client";
import { events, upsDevices } from "@/lib/db/schema";
import type { FailedRun, RunFailure } from "@/lib/pipeline/step";
import { DRILL_TRIGGER } from "@/lib/power/shutdown/drill-mark";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import type { ShutdownInput } from "./shutdown-plan";

/** What the operator is to make of each way a run can end failed, after the reason itself. */
const CAUSE_NOTE: Record<Exclude<RunFailure["cause"], "aborted">, string> = {
  step: "",
  errors:
    " (it failed on every attempt: an error in the console or its database, not a target's answer; the worker's log has it)",
  deadline: " (it ran out of time)",
  engine: " (this version of the console cannot go on with it: was the console updated mid-run?)",
};

/**
 * The power-shutdown pipeline's onFailed (lib/pipeline/step.ts): a run that ends without
 * success is a power event, so it notifies like every other one — whatever ended it, the
 * step's own fail as much as the engine (attempts used up, maxDuration, a step this version does
 * not know), where nothing else would have said a word. In the failure's own transaction.
 *
 * - the operator's Abort: `shutdown.aborted`, a warning naming who — someone chose it, but
 *   whatever the run had not shut down yet stays up, and the others on call should know;
 * - a run cancelled because the mains came back (ShutDownTargets' `outcome: cancelled`): its
 *   own `shutdown.cancelled` already said so; nothing more;
 * - any other failure: `shutdown.run_failed`, critical: the shutdown did not finish.
 */
export async function reportFailedRun(
  tx: Transaction,
  run: FailedRun,
  failure: RunFailure,
): Promise<void> {
  if (run.context.outcome === "cancelled") return;
  const trigger = (run.context.input as Partial<ShutdownInput> | undefined)?.trigger;
  const drill = trigger?.trigger === DRILL_TRIGGER;
  const subject =
    `Power ${drill ? "drill" : "shutdown"} run ${run.id}` +
    (trigger?.upsName ? ` of UPS ${trigger.upsName}` : "");
  const upsId = trigger?.upsId ? await existingUps(tx, trigger.upsId) : null;
  const data = {
    runId: run.id,
    step: failure.step,
    reason: failure.reason,
    cause: failure.cause,
    ...(trigger ? { ups: trigger.upsName, trigger: trigger.trigger } : {}),
  };
  if (failure.cause === "aborted") {
    const by = await abortedBy(tx, run.id);
    await recordPowerEvents(tx, [
      {
        severity: "warning",
        kind: "shutdown.aborted",
        message:
          `${subject} was aborted by ${by ?? "an operator"} during ${failure.step}. ` +
          (drill
            ? "Check on /power/runs what it had done."
            : "What it had not shut down yet stays up: check on /power which targets still run, and shut them down by hand if their UPS is still on battery."),
        upsId,
        runId: run.id,
        data: { ...data, by },
      },
    ]);
    return;
  }
  await recordPowerEvents(tx, [
    {
      severity: "critical",
      kind: "shutdown.run_failed",
      message:
        `${subject} failed at ${failure.step}: ${failure.reason}${CAUSE_NOTE[failure.cause]}. ` +
        (drill
          ? "Check the run's log on /power/runs for what failed."
          : "Check on /power which targets are still up and shut them down by hand before the battery runs out; the run's log on /power/runs says what was sent. While the trigger holds, the power monitor starts a new run for targets no call reached, a few times per outage at most."),
      upsId,
      runId: run.id,
      data,
    },
  ]);
}

/** The UPS, if it still exists (an event may not name a deleted one). */
async function existingUps(tx: Transaction, upsId: string): Promise<string | null> {
  const [row] = await tx
    .select({ id: upsDevices.id })
    .from(upsDevices)
    .where(eq(upsDevices.id, upsId));
  return row?.id ?? null;
}

/** Who asked for the abort, as the run's `run.abort_requested` event names them. */
async function abortedBy(tx: Transaction, runId: string): Promise<string | null> {
  const [row] = await tx
    .select({ actor: events.actor })
    .from(events)
    .where(and(eq(events.runId, runId), eq(events.kind, "run.abort_requested")))
    .orderBy(desc(events.id))
    .limit(1);
  return row?.actor ?? null;
}
