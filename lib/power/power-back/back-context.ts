import { fail, type Outcome, type StepContext } from "@/lib/pipeline/step";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { recordPowerEvents, type PowerEventInput } from "@/lib/power/records/power-events";
import { recordInstantAction } from "@/lib/power/records/run-actions";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { feedsOnBattery } from "@/lib/power/targets/feed-status";
import { NO_BACK_PLAN, type PowerBackPlan } from "./back-plan";

export type BackCtx = StepContext<PowerServices>;

/** How old a reading may be to count (the monitor reads every second). */
const FRESH_MS = 30_000;

/** The `outcome` a run stopped by a new outage leaves in its context (its failure says why). */
export const NEW_OUTAGE = "new-outage";

export function backPlan(ctx: BackCtx): PowerBackPlan | null {
  return ctx.context.get<PowerBackPlan>("plan") ?? null;
}

/**
 * A new outage wins (issue 30, item 5): a feed of these hosts on battery again ends the run at
 * once — nothing more is powered on or started — and the monitor decides afresh (hosts already
 * back are targets again through the ordinary trigger). Asked before every action that powers
 * something on. Returns the failure to end the run with, or null to go on.
 */
export async function newOutage(ctx: BackCtx, plan: PowerBackPlan): Promise<Outcome | null> {
  const onBattery = await feedsOnBattery(ctx.services.db, plan.feeds, new Date(), FRESH_MS);
  if (onBattery.length === 0) return null;
  const names = onBattery.map((f) => f.name).join(", ");
  ctx.context.set("outcome", NEW_OUTAGE);
  const reason = `mains lost again on ${names}: the way back stops here, nothing more is powered on or started; the power monitor decides afresh (hosts already back are shutdown targets again)`;
  ctx.log(reason);
  return fail(reason);
}

/** The plan, and whether anything may be sent now: armed when planned, and still armed. */
export async function backRun(
  ctx: BackCtx,
): Promise<{ outcome: Outcome } | { outcome: null; plan: PowerBackPlan; armed: boolean }> {
  const plan = backPlan(ctx);
  if (!plan) return { outcome: fail(NO_BACK_PLAN) };
  const stop = await newOutage(ctx, plan);
  if (stop) return { outcome: stop };
  if (plan.mode !== "armed") return { outcome: null, plan, armed: false };
  const settings = await readPowerSettings(ctx.services.db);
  if (settings.mode !== "armed") {
    ctx.log("disarmed since the way back was planned: from here on nothing is sent");
    return { outcome: null, plan, armed: false };
  }
  return { outcome: null, plan, armed: true };
}

/** A line in the run's log and the power event log alike. */
export async function reportBack(
  ctx: BackCtx,
  event: Omit<PowerEventInput, "runId">,
): Promise<void> {
  ctx.log(event.message);
  await recordPowerEvents(ctx.services.db, [{ ...event, runId: ctx.runId }]);
}

/** Dry-run: an action recorded as would-do; nothing leaves the console. */
export async function wouldBack(
  ctx: BackCtx,
  action: { lane: string; label: string; request?: string; detail?: string },
): Promise<void> {
  ctx.log(
    `would ${action.label}${action.request ? `: ${action.request}` : ""} (dry-run: nothing sent)`,
  );
  await recordInstantAction(ctx.services.db, {
    runId: ctx.runId,
    lane: action.lane,
    label: action.label,
    request: action.request ?? null,
    outcome: "would-do",
    detail: `dry-run: nothing sent${action.detail ? `; ${action.detail}` : ""}`,
  });
}

/** What a step that did nothing in dry-run says (the power pages' "skipped — dry-run"). */
export const SKIPPED_DRY_RUN = "skipped — dry-run";

/**
 * Says in the run's log what the step waits for — once each time it changes, not every look —
 * and returns it for the phase line.
 */
export function waitingFor(ctx: BackCtx, key: string, what: string): string {
  const said = ctx.context.get<Record<string, string>>("back:waiting") ?? {};
  if (said[key] !== what) {
    ctx.log(`${key}: waiting for ${what}`);
    ctx.context.set("back:waiting", { ...said, [key]: what });
  }
  return `waiting for ${what}`;
}
