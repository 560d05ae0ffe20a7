import type { Transaction } from "@/lib/db/client";
import { advance, fail, type FailedRun, type RunFailure, type Step } from "@/lib/pipeline/step";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { NO_BACK_PLAN, type PowerBackPlan } from "@/lib/power/power-back/back-plan";
import type { GuestWork } from "@/lib/power/power-back/start-guests";
import { reportShed, SHED_ENDED } from "./shed-context";
import { NO_SHED_PLAN, type ShedPlan } from "./shed-plan";
import type { ShedState } from "./stop-shed-guests";

/** The shed's last step: what it shed, as one `power.shed.done` event. */
export const reportShedDone: Step<PowerServices> = {
  name: "ReportShed",
  maxDuration: () => 60,
  async visit(ctx) {
    const plan = ctx.context.get<ShedPlan>("plan");
    if (!plan) return fail(NO_SHED_PLAN);
    const state = ctx.context.get<ShedState>("shed:guests") ?? {};
    const all = Object.values(state).flatMap((g) => Object.values(g.guests));
    const ids = (o: string) => all.filter((w) => w.outcome === o).map((w) => w.vmid);
    const left = all.filter((w) => w.outcome === "skipped" || !w.outcome).map((w) => w.vmid);
    const unlisted = plan.groups.filter((g) => state[g.key]?.problem).map((g) => g.name);
    const outcome = ctx.context.get<string>("outcome");
    const ended =
      outcome === SHED_ENDED.mainTrigger
        ? "; the main trigger fired: the shutdown run took over"
        : outcome === SHED_ENDED.mainsBack
          ? "; mains came back before the main trigger"
          : "";
    const message =
      plan.mode !== "armed"
        ? `Early shedding (dry-run): would shed ${ids("would").join(", ") || "no guest"}; nothing was sent${ended}`
        : `Early shedding: ${ids("stopped").length} guest(s) shed (${ids("stopped").join(", ") || "none"}, each read back stopped)` +
          (left.length > 0 ? `; left running: ${left.join(", ")}` : "") +
          (unlisted.length > 0 ? `; could not list the guests of ${unlisted.join(", ")}` : "") +
          ended;
    await reportShed(ctx, {
      severity: left.length > 0 || unlisted.length > 0 ? "warning" : "info",
      kind: "power.shed.done",
      message,
      data: { mode: plan.mode, shed: ids("stopped"), wouldShed: ids("would"), left, outcome },
    });
    return advance(message);
  },
};

/** The restart's last step: which shed guests run again, as one `power.shed.restarted` event. */
export const reportShedBack: Step<PowerServices> = {
  name: "ReportShedBack",
  maxDuration: () => 60,
  async visit(ctx) {
    const plan = ctx.context.get<PowerBackPlan>("plan");
    if (!plan) return fail(NO_BACK_PLAN);
    const guests = ctx.context.get<Record<string, GuestWork>>("back:guests") ?? {};
    const running = plan.guests.filter((g) => guests[g.vmid]?.outcome === "running");
    const notStarted = plan.guests.filter((g) => guests[g.vmid]?.outcome === "failed");
    const message =
      plan.mode !== "armed"
        ? `Mains back before the main trigger (dry-run): ${plan.guests.length} shed guest(s) would start again (${plan.guests.map((g) => g.vmid).join(", ") || "none"}); nothing was sent`
        : `Mains back before the main trigger: ${running.length} of ${plan.guests.length} shed guest(s) running again` +
          (notStarted.length > 0
            ? `; NOT started: ${notStarted.map((g) => g.vmid).join(", ")}`
            : "");
    await reportShed(ctx, {
      severity: notStarted.length > 0 ? "warning" : "info",
      kind: "power.shed.restarted",
      message,
      data: {
        mode: plan.mode,
        running: running.map((g) => g.vmid),
        notStarted: notStarted.map((g) => g.vmid),
      },
    });
    return advance(message);
  },
};

/** The shed pipeline's onFailed: a critical `power.shed.failed` naming the step and the reason. */
export async function reportFailedShed(
  tx: Transaction,
  run: FailedRun,
  failure: RunFailure,
): Promise<void> {
  await recordPowerEvents(tx, [
    {
      severity: "critical",
      kind: "power.shed.failed",
      message: `${run.pipeline === "power-shed-back" ? "Restarting the shed guests" : "Early shedding"}: run ${run.id} failed at ${failure.step}: ${failure.reason}. The main trigger still shuts everything down on time; check on /power which shed guests still run.`,
      runId: run.id,
      data: { runId: run.id, step: failure.step, reason: failure.reason, cause: failure.cause },
    },
  ]);
}
