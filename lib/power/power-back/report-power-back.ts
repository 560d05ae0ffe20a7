import { and, desc, eq } from "drizzle-orm";
import type { Transaction } from "@/lib/db/client";
import { events } from "@/lib/db/schema";
import { advance, fail, type FailedRun, type RunFailure, type Step } from "@/lib/pipeline/step";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { isDrillWayBack, NO_BACK_PLAN, type PowerBackPlan } from "./back-plan";
import { NEW_OUTAGE, reportBack } from "./back-context";
import type { PowerOnState } from "./power-on-hosts";

/**
 * The last step: what the way back did, as one `power_back.done` event (a warning when a host or
 * a guest did not come back, so it notifies those who must finish by hand).
 */
export const reportPowerBack: Step<PowerServices> = {
  name: "ReportPowerBack",
  maxDuration: () => 60,
  async visit(ctx) {
    const plan = ctx.context.get<PowerBackPlan>("plan");
    if (!plan) return fail(NO_BACK_PLAN);
    const power = ctx.context.get<PowerOnState>("back:power") ?? {};
    const guests = ctx.context.get<Record<string, { outcome?: string }>>("back:guests") ?? {};
    const notOn = plan.hosts.filter(
      (h) => power[h.targetId] === "failed" || power[h.targetId] === "no-controller",
    );
    const notStarted = plan.guests.filter((g) => guests[g.vmid]?.outcome === "failed");
    const dry = plan.mode !== "armed";
    const drill = isDrillWayBack(ctx.context.get("input"));
    const title = drill ? "Drill: way back" : "Power back";
    const message = dry
      ? `${title} (dry-run): ${plan.hosts.length} host(s) would be powered on and ${plan.guests.length} guest(s) started; nothing was sent`
      : `${title} done: ${plan.hosts.length - notOn.length} of ${plan.hosts.length} host(s) powered on, ${plan.guests.length - notStarted.length} of ${plan.guests.length} guest(s) running again` +
        (notOn.length > 0 ? `; NOT powered on: ${notOn.map((h) => h.name).join(", ")}` : "") +
        (notStarted.length > 0 ? `; NOT started: ${notStarted.map((g) => g.vmid).join(", ")}` : "");
    await reportBack(ctx, {
      severity: notOn.length > 0 || notStarted.length > 0 ? "warning" : "info",
      kind: "power_back.done",
      message,
      data: {
        mode: plan.mode,
        drill,
        notPoweredOn: notOn.map((h) => h.name),
        notStarted: notStarted.map((g) => g.vmid),
      },
    });
    return advance(message);
  },
};

/**
 * The power-back pipeline's onFailed: a way back that ends without success is a critical
 * `power_back.failed` — a new outage that stopped it, an abort, a step that failed or outlived
 * its time — naming the run, the step and the reason. In the failure's own transaction.
 */
export async function reportFailedPowerBack(
  tx: Transaction,
  run: FailedRun,
  failure: RunFailure,
): Promise<void> {
  const why =
    run.context.outcome === NEW_OUTAGE
      ? "a new outage stopped it"
      : failure.cause === "aborted"
        ? `it was stopped by ${(await abortedBy(tx, run.id)) ?? "an operator"}`
        : `it failed at ${failure.step}`;
  await recordPowerEvents(tx, [
    {
      severity: "critical",
      kind: "power_back.failed",
      message: `${isDrillWayBack(run.context.input) ? "Drill: way-back" : "Power-back"} run ${run.id}: ${why}: ${failure.reason}. Check on /power which hosts are up and which guests run; the run's log on /power/runs says what it did.`,
      runId: run.id,
      data: {
        runId: run.id,
        drill: isDrillWayBack(run.context.input),
        step: failure.step,
        reason: failure.reason,
        cause: failure.cause,
      },
    },
  ]);
}

/** Who asked for the abort (the power monitor names the feed back on battery). */
async function abortedBy(tx: Transaction, runId: string): Promise<string | null> {
  const [row] = await tx
    .select({ actor: events.actor })
    .from(events)
    .where(and(eq(events.runId, runId), eq(events.kind, "run.abort_requested")))
    .orderBy(desc(events.id))
    .limit(1);
  return row?.actor ?? null;
}
