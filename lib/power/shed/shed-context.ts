import { advance, fail, type Outcome, type StepContext } from "@/lib/pipeline/step";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { recordPowerEvents, type PowerEventInput } from "@/lib/power/records/power-events";
import { recordInstantAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { feedsBackFor } from "@/lib/power/targets/feed-status";
import { SHED_READING_FRESH_MS, shedFeeds } from "./shed-feeds";
import { NO_SHED_PLAN, type ShedPlan } from "./shed-plan";

export type ShedCtx = StepContext<PowerServices>;

/** The `outcome` a shed run leaves when the main shutdown took over or mains came back. */
export const SHED_ENDED = { mainTrigger: "main-trigger", mainsBack: "mains-back" } as const;

/**
 * Whether the shed goes on: the main trigger latched on a feed of its targets — the main
 * shutdown wins, the shed sends nothing more and never holds it up — or every feed is back on
 * mains for its confirmation (the monitor then starts the shed guests again). Returns the
 * outcome to end the visit with, or null to go on.
 */
async function shedOver(ctx: ShedCtx, plan: ShedPlan): Promise<Outcome | null> {
  const now = new Date();
  const feeds = await shedFeeds(ctx.services.db, plan.feeds, now);
  const latched = [...feeds.values()].filter((f) => f.latched);
  if (latched.length > 0) {
    ctx.context.set("outcome", SHED_ENDED.mainTrigger);
    const why = `the main trigger fired on ${latched.map((f) => f.name).join(", ")}: the shutdown run takes over (it stops every guest), the shed sends nothing more`;
    ctx.log(why);
    return advance(why);
  }
  const back = await feedsBackFor(ctx.services.db, plan.feeds, now, SHED_READING_FRESH_MS);
  if (plan.feeds.length > 0 && plan.feeds.every((id) => back.get(id) === true)) {
    ctx.context.set("outcome", SHED_ENDED.mainsBack);
    const why =
      "mains back on every feed before the main trigger: shedding stops here; the guests shed so far are started again";
    ctx.log(why);
    return advance(why);
  }
  return null;
}

/** The plan, and whether anything may be sent now: armed when planned, and still armed. */
export async function shedRun(
  ctx: ShedCtx,
): Promise<{ outcome: Outcome } | { outcome: null; plan: ShedPlan; armed: boolean }> {
  const plan = ctx.context.get<ShedPlan>("plan");
  if (!plan) return { outcome: fail(NO_SHED_PLAN) };
  const over = await shedOver(ctx, plan);
  if (over) return { outcome: over };
  if (plan.mode !== "armed") return { outcome: null, plan, armed: false };
  const settings = await readPowerSettings(ctx.services.db);
  if (settings.mode !== "armed") {
    ctx.log("disarmed since the shed was planned: from here on nothing is sent");
    return { outcome: null, plan, armed: false };
  }
  return { outcome: null, plan, armed: true };
}

/** A line in the run's log and the power event log alike. */
export async function reportShed(
  ctx: ShedCtx,
  event: Omit<PowerEventInput, "runId">,
): Promise<void> {
  ctx.log(event.message);
  await recordPowerEvents(ctx.services.db, [{ ...event, runId: ctx.runId }]);
}

/** Dry-run: an action recorded as would-do; nothing leaves the console. */
export async function wouldShed(
  ctx: ShedCtx,
  action: { lane: string; label: string; request: string; detail?: string },
): Promise<void> {
  ctx.log(`would ${action.label}: ${action.request} (dry-run: nothing sent)`);
  await recordInstantAction(ctx.services.db, {
    runId: ctx.runId,
    lane: action.lane,
    label: action.label,
    request: action.request,
    outcome: "would-do",
    detail: `dry-run: nothing sent${action.detail ? `; ${action.detail}` : ""}`,
  });
}
