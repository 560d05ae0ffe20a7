import { advance, fail, poll, type Step, type StepContext } from "@/lib/pipeline/step";
import { recordInstantAction } from "@/lib/power/records/run-actions";
import { cancelsOnMainsBack } from "@/lib/power/shutdown/drill-mark";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { mainsBackFor } from "@/lib/power/targets/due-targets";
import { feedsBackFor, feedsOnMains } from "@/lib/power/targets/feed-status";
import { powerShutdownCalls } from "@/lib/db/schema";
import {
  attemptDue,
  attemptShutdown,
  laneOf,
  outageCalls,
  settleAttempt,
  standingOf,
  type AttemptOutcome,
} from "./call-attempts";
import { callsOfRun, type ShutdownCall } from "./calls";
import {
  NO_PLAN,
  type PlannedTarget,
  type ShutdownInput,
  type ShutdownPlan,
} from "./shutdown-plan";
import type { PowerServices } from "./services";
import { listGuestsBefore } from "./guests-before";

export const SHUTDOWN_CANCELLED = "mains back before anything was sent: shutdown cancelled";

type Ctx = StepContext<PowerServices>;

/**
 * Sends the plan's calls, one group per visit. Before the first call it asks the feeds once
 * more: power back on a target's feeds (by a reliable reading) drops it, all of them cancels the
 * run. After that the sequence goes on — a target that fails or hangs is reported, the next
 * group follows, and the failed call is sent again (with backoff) alongside the later groups
 * and in VerifyTargetsDown until the target is seen down or its time is over
 * (./call-attempts.ts: at most one *accepted* call per target per outage, across runs).
 *
 * A claim found still `sending` by a later visit means its worker died mid-call: it may have
 * arrived; it is settled as "outcome unknown" and the target is called again unless seen down.
 */
export const shutDownTargets: Step<PowerServices> = {
  name: "ShutDownTargets",
  // Groups follow one another, each up to its call deadline; a long sequence takes a while.
  maxDuration: () => 3600,
  async visit(ctx) {
    const { db } = ctx.services;
    const plan = ctx.context.get<ShutdownPlan>("plan");
    const input = ctx.context.get<ShutdownInput>("input");
    if (!plan || !input) return fail(NO_PLAN);
    const upsId = input.trigger.upsId;
    const dropped = new Set(ctx.context.get<string[]>("dropped") ?? []);
    const skipped = new Set(ctx.context.get<string[]>("skipped") ?? []);
    const elsewhere = new Set(ctx.context.get<string[]>("elsewhere") ?? []);

    const calls = await callsOfRun(db, ctx.runId);
    for (const call of calls.filter((c) => c.state === "sending")) {
      await settleAttempt(
        ctx,
        call,
        upsId,
        {
          state: "unknown",
          detail:
            "the worker stopped while this call was in flight; it may have arrived; sent again unless the target is seen down",
        },
        plan.targets.find((t) => t.id === call.targetId),
      );
    }

    if (calls.length === 0 && cancelsOnMainsBack(ctx.context.get("input"))) {
      const back = await targetsWithMainsBack(ctx, plan, dropped);
      const left = plan.targets.filter((t) => !dropped.has(t.id) && !back.includes(t));
      for (const target of back) dropped.add(target.id);
      ctx.context.set("dropped", [...dropped]);
      // A retried cancelled run that goes ahead is no longer a cancelled one.
      ctx.context.delete("outcome");
      if (left.length === 0) {
        ctx.context.set("outcome", "cancelled");
        ctx.log(SHUTDOWN_CANCELLED);
        await recordPowerEvents(db, [
          {
            severity: "warning",
            kind: "shutdown.cancelled",
            message: `${SHUTDOWN_CANCELLED} (${plan.targets.map((t) => t.name).join(", ")})`,
            upsId,
            runId: ctx.runId,
            data: { targets: plan.targets.map((t) => t.id) },
          },
        ]);
        return fail(SHUTDOWN_CANCELLED);
      }
      for (const target of back) {
        const line = `${target.name}: mains back on its feeds before anything was sent to it: left out`;
        ctx.log(line);
        await recordPowerEvents(db, [
          {
            severity: "info",
            kind: "shutdown.cancelled",
            message: line,
            upsId,
            targetId: target.id,
            runId: ctx.runId,
          },
        ]);
      }
    }

    // Cluster nodes (and a standalone console host held back behind them) go down later, in
    // ShutDownClusterNodes. A plan frozen before clusters existed has neither field.
    const attempted = new Set(calls.map((c) => c.targetId));
    const notBegun = (t: PlannedTarget) =>
      !t.cluster &&
      !t.afterClusters &&
      !dropped.has(t.id) &&
      !skipped.has(t.id) &&
      !attempted.has(t.id) &&
      !elsewhere.has(t.id);
    // Mains back and held since the first call: the stages not begun yet are spared.
    if (calls.length > 0) {
      for (const target of await spareNotBegun(ctx, plan, plan.targets.filter(notBegun))) {
        dropped.add(target.id);
      }
    }
    const standalone = plan.targets.filter(
      (t) => !t.cluster && !t.afterClusters && !dropped.has(t.id) && !skipped.has(t.id),
    );
    const pending = standalone.filter((t) => !attempted.has(t.id) && !elsewhere.has(t.id));
    const group = pending[0]?.group;
    const armed = await armedNow(ctx, plan);
    const batch = group === undefined ? [] : pending.filter((t) => t.group === group);
    const retries = armed
      ? await dueAgain(
          ctx,
          standalone.filter((t) => attempted.has(t.id)),
        )
      : [];
    if (batch.length > 0 || retries.length > 0) {
      const outcomes = await Promise.all([
        ...batch.map((target) => {
          // What ran before, for the way back: its first request goes out before the call, and
          // neither this call nor the next stage's ever waits for it — it runs on by itself
          // and records what it found, or "unknown" (./guests-before.ts; it never throws).
          void listGuestsBefore(ctx, target, armed);
          return armed ? attemptShutdown(ctx, target, upsId) : wouldCall(ctx, target, upsId);
        }),
        ...retries.map((target) => attemptShutdown(ctx, target, upsId)),
      ]);
      const targets = [...batch, ...retries];
      for (const [i, outcome] of outcomes.entries()) {
        const target = targets[i]!;
        if (outcome === "done") continue;
        if (outcome === "skipped") {
          skipped.add(target.id);
        } else if (outcome.kind === "unreachable") {
          await unreachable(ctx, target, upsId);
          skipped.add(target.id);
        } else if (outcome.kind === "elsewhere") {
          ctx.log(
            `${target.name}: not sent from this run — run ${outcome.runId} holds its call for this outage (${outcome.state === "sent" ? "accepted" : "in flight"}); watched until it is down`,
          );
          elsewhere.add(target.id);
        }
      }
      ctx.context.set("skipped", [...skipped]);
      ctx.context.set("elsewhere", [...elsewhere]);
      if (pending.some((t) => t.group !== group)) {
        return poll(0, `group ${(group ?? 0) + 1} of ${plan.groups} done`);
      }
    }
    const later = plan.targets.filter((t) => Boolean(t.cluster) || t.afterClusters);
    return advance(
      summary(plan, await callsOfRun(db, ctx.runId), dropped, skipped, elsewhere) +
        (later.length > 0
          ? `; ${later.map((t) => t.name).join(", ")} go down after the cluster sequence`
          : ""),
    );
  },
};

/**
 * Sends again, side by side, the calls of targets the sequence already reached whose call
 * failed or went unanswered and whose pause is over (targets with no way to reach them aside).
 */
export async function sendDueRetries(
  ctx: Ctx,
  upsId: string,
  reached: readonly PlannedTarget[],
): Promise<AttemptOutcome[]> {
  const due = await dueAgain(
    ctx,
    reached.filter((t) => t.request && t.endpoint),
  );
  return Promise.all(due.map((t) => attemptShutdown(ctx, t, upsId)));
}

/** Of these targets, those whose call failed or went unanswered and whose pause is over. */
export async function dueAgain(
  ctx: Ctx,
  targets: readonly PlannedTarget[],
): Promise<PlannedTarget[]> {
  const calls = await outageCalls(ctx.services.db, targets);
  const now = new Date();
  return targets.filter((t) => attemptDue(standingOf(calls, t.id, ctx.runId), now));
}

/**
 * Mains back after the first call: a stage not begun yet is not started once mains has held on
 * its targets' feeds for the trigger's confirmation (a blip of mains is no more power back than
 * a blip of battery is an outage). What began goes on. Returns the targets spared now, added to
 * the run's `dropped`, with one event naming them. A drill, rehearsed on mains, spares nothing.
 */
export async function spareNotBegun(
  ctx: Ctx,
  plan: ShutdownPlan,
  notBegun: readonly PlannedTarget[],
): Promise<PlannedTarget[]> {
  const input = ctx.context.get<ShutdownInput>("input");
  if (notBegun.length === 0 || !input || !cancelsOnMainsBack(input)) return [];
  const { db } = ctx.services;
  const settings = await readPowerSettings(db);
  const upsIds = [...new Set(notBegun.flatMap((t) => t.feeds.map((f) => f.upsId)))];
  const back = await feedsBackFor(
    db,
    upsIds,
    new Date(),
    Math.max(5000, 5 * settings.pollIntervalMs),
  );
  const spared = notBegun.filter((t) =>
    mainsBackFor({ feedPolicy: t.feedPolicy, feeds: t.feeds.map((f) => f.upsId) }, back),
  );
  if (spared.length === 0) return [];
  const dropped = new Set(ctx.context.get<string[]>("dropped") ?? []);
  for (const target of spared) dropped.add(target.id);
  ctx.context.set("dropped", [...dropped]);
  const names = spared.map((t) => t.name).join(", ");
  const line = `mains back and held on their feeds before their stage began: ${names} spared — not shut down; what was already sent goes on`;
  ctx.log(line);
  await recordPowerEvents(db, [
    {
      severity: "warning",
      kind: "shutdown.spared",
      message: line,
      upsId: input.trigger.upsId,
      runId: ctx.runId,
      data: { targets: spared.map((t) => t.id), names: spared.map((t) => t.name) },
    },
  ]);
  return spared;
}

async function targetsWithMainsBack(
  ctx: Ctx,
  plan: ShutdownPlan,
  dropped: ReadonlySet<string>,
): Promise<PlannedTarget[]> {
  const { db } = ctx.services;
  const settings = await readPowerSettings(db);
  const upsIds = [...new Set(plan.targets.flatMap((t) => t.feeds.map((f) => f.upsId)))];
  const onMains = await feedsOnMains(
    db,
    upsIds,
    new Date(),
    Math.max(5000, 5 * settings.pollIntervalMs),
  );
  return plan.targets.filter(
    (t) =>
      !dropped.has(t.id) &&
      mainsBackFor({ feedPolicy: t.feedPolicy, feeds: t.feeds.map((f) => f.upsId) }, onMains),
  );
}

/**
 * Whether calls go out now: the plan was made armed and the console still is (disarming stops
 * a run from sending anything more).
 */
export async function armedNow(ctx: Ctx, plan: ShutdownPlan): Promise<boolean> {
  if (plan.mode !== "armed") return false;
  const settings = await readPowerSettings(ctx.services.db);
  if (settings.mode === "armed") return true;
  ctx.log("disarmed since the plan was made: from here on nothing is sent");
  return false;
}

/** Dry-run: record exactly what would be sent. Nothing leaves the console. */
export async function wouldCall(
  ctx: Ctx,
  target: PlannedTarget,
  upsId: string,
): Promise<"done" | "skipped"> {
  const { db } = ctx.services;
  if (!target.request) return unreachable(ctx, target, upsId);
  const line = `${target.name}: would ${target.request.line} (dry-run: nothing sent)`;
  ctx.log(line);
  await db.transaction(async (tx) => {
    const claimed = await tx
      .insert(powerShutdownCalls)
      .values({
        runId: ctx.runId,
        targetId: target.id,
        dueSince: new Date(target.dueSince),
        state: "would_send",
        request: target.request!.line,
        finishedAt: new Date(),
      })
      .onConflictDoNothing()
      .returning({ id: powerShutdownCalls.id });
    if (claimed.length === 0) return; // recorded by an earlier visit of this run
    await recordInstantAction(tx, {
      runId: ctx.runId,
      lane: laneOf(target),
      label: `shutdown ${laneOf(target)}`,
      request: target.request!.line,
      outcome: "would-do",
      detail: "dry-run: nothing sent",
    });
    await recordPowerEvents(tx, [
      {
        severity: "info",
        kind: "shutdown.would_send",
        message: line,
        upsId,
        targetId: target.id,
        runId: ctx.runId,
        data: { request: target.request, dueSince: target.dueSince },
      },
    ]);
  });
  return "done";
}

export async function unreachable(
  ctx: Ctx,
  target: PlannedTarget,
  upsId: string,
): Promise<"skipped"> {
  const line = `${target.name}: not sent: ${target.problem ?? "no way to reach it"}`;
  ctx.log(line);
  await recordPowerEvents(ctx.services.db, [
    {
      severity: "critical",
      kind: "shutdown.failed",
      message: line,
      upsId,
      targetId: target.id,
      runId: ctx.runId,
    },
  ]);
  return "skipped";
}

/** The run's targets by where their calls stand (each target once, by its latest attempt). */
function summary(
  plan: ShutdownPlan,
  calls: readonly ShutdownCall[],
  dropped: ReadonlySet<string>,
  skipped: ReadonlySet<string>,
  elsewhere: ReadonlySet<string>,
): string {
  const latest = new Map(calls.map((c) => [c.targetId, c]));
  const count = (state: ShutdownCall["state"]) =>
    [...latest.values()].filter((c) => c.state === state).length;
  const attempts = calls.filter((c) => c.state !== "would_send").length;
  const parts = [
    [count("sent"), "accepted"],
    [count("unknown"), "sent with outcome unknown (sent again unless seen down)"],
    [count("failed"), "failed so far (sent again until seen down)"],
    [count("would_send"), "would have been sent (dry-run)"],
    [elsewhere.size, "called by another run of this outage"],
    [skipped.size, "not sent (no way to reach them)"],
    [dropped.size, "left out (mains back)"],
  ] as const;
  const text = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
  const tries = attempts > latest.size ? ` in ${attempts} attempts` : "";
  return `${plan.targets.length} target(s): ${text.join(", ") || "nothing to do"}${tries}`;
}

export type { AttemptOutcome };
