import { and, eq, ne } from "drizzle-orm";
import { powerShutdownCalls } from "@/lib/db/schema";
import {
  finishOpenActions,
  recordInstantAction,
  startAction,
} from "@/lib/power/actions/record-action";
import { errorMessage } from "@/lib/pipeline/engine";
import { advance, fail, poll, type Step, type StepContext } from "@/lib/pipeline/step";
import { cancelsOnMainsBack } from "@/lib/power/drill/drill-mark";
import { recordPowerEvents } from "@/lib/power/events";
import { readPowerSettings } from "@/lib/power/power-settings-store";
import { mainsBackFor } from "@/lib/power/targets/due-targets";
import { feedsOnMains } from "@/lib/power/targets/feed-status";
import { sendShutdown } from "@/lib/power/targets/shutdown-call";
import { callsOfRun, type ShutdownCall } from "./calls";
import { NO_PLAN, type PlannedTarget, type ShutdownInput, type ShutdownPlan } from "./plan";
import type { PowerServices } from "./services";

export const SHUTDOWN_CANCELLED = "mains back before anything was sent: shutdown cancelled";

type Ctx = StepContext<PowerServices>;

/**
 * Sends the plan's calls, one group per visit. Before the first call it asks the feeds once
 * more: power back on a target's feeds (by a reliable reading) drops it, all of them cancels the
 * run. After that the sequence goes to the end — a target that fails or hangs is reported and
 * the next one follows.
 *
 * Exactly one call per target per outage: each call is claimed in `power_shutdown_calls` (its own
 * committed transaction) before it goes out. A claim found still `sending` by a later visit
 * means its worker died mid-call: the target may have been told, so it is reported as "sent,
 * outcome unknown" and never called again; a claim held by another run for the same outage is
 * not repeated either.
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

    let calls = await callsOfRun(db, ctx.runId);
    for (const call of calls.filter((c) => c.state === "sending")) {
      await settleCall(
        ctx,
        call,
        upsId,
        {
          state: "unknown",
          detail:
            "the worker stopped while this call was in flight; it may have arrived; not sent again",
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
    const pending = plan.targets.filter(
      (t) =>
        !t.cluster &&
        !t.afterClusters &&
        !dropped.has(t.id) &&
        !skipped.has(t.id) &&
        !calls.some((c) => c.targetId === t.id),
    );
    const group = pending[0]?.group;
    if (group !== undefined) {
      const armed = await armedNow(ctx, plan);
      const batch = pending.filter((t) => t.group === group);
      const outcomes = await Promise.all(
        batch.map((target) =>
          armed ? callTarget(ctx, target, upsId) : wouldCall(ctx, target, upsId),
        ),
      );
      batch.forEach((target, i) => {
        if (outcomes[i] === "skipped") skipped.add(target.id);
      });
      ctx.context.set("skipped", [...skipped]);
      if (pending.some((t) => t.group !== group)) {
        return poll(0, `group ${group + 1} of ${plan.groups} done`);
      }
    }
    calls = await callsOfRun(db, ctx.runId);
    const later = plan.targets.filter((t) => Boolean(t.cluster) || t.afterClusters);
    return advance(
      summary(plan, calls, dropped, skipped) +
        (later.length > 0
          ? `; ${later.map((t) => t.name).join(", ")} go down after the cluster sequence`
          : ""),
    );
  },
};

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

/** Armed: claim, send under the deadline, record what happened. */
export async function callTarget(
  ctx: Ctx,
  target: PlannedTarget,
  upsId: string,
): Promise<"done" | "skipped"> {
  const { db } = ctx.services;
  if (!target.request || !target.endpoint) return unreachable(ctx, target, upsId);
  const dueSince = new Date(target.dueSince);
  const [claim] = await db
    .insert(powerShutdownCalls)
    .values({
      runId: ctx.runId,
      targetId: target.id,
      dueSince,
      state: "sending",
      request: target.request.line,
    })
    .onConflictDoNothing()
    .returning();
  if (!claim) {
    const [other] = await db
      .select({ runId: powerShutdownCalls.runId, state: powerShutdownCalls.state })
      .from(powerShutdownCalls)
      .where(
        and(
          eq(powerShutdownCalls.targetId, target.id),
          eq(powerShutdownCalls.dueSince, dueSince),
          ne(powerShutdownCalls.state, "would_send"),
        ),
      );
    ctx.log(
      `${target.name}: not sent again — run ${other?.runId ?? "?"} already called it for this outage (${other?.state ?? "claimed"})`,
    );
    return "skipped";
  }
  ctx.log(`${target.name}: ${target.request.line} (deadline ${target.deadlineSeconds} s)`);
  await startAction(db, {
    runId: ctx.runId,
    lane: laneOf(target),
    label: `shutdown ${laneOf(target)}`,
    request: target.request.line,
  });
  const started = Date.now();
  try {
    await sendShutdown(db, target.endpoint, {
      timeoutMs: target.deadlineSeconds * 1000,
      onSecret: ctx.services.maskSecret,
    });
    const detail = `accepted in ${Date.now() - started} ms`;
    ctx.log(`${target.name}: ${detail}`);
    await settleCall(ctx, claim, upsId, { state: "sent", detail }, target);
  } catch (error) {
    const detail = errorMessage(error);
    ctx.log(`${target.name}: FAILED: ${detail}; going on with the next target`);
    await settleCall(ctx, claim, upsId, { state: "failed", detail }, target);
  }
  return "done";
}

async function unreachable(ctx: Ctx, target: PlannedTarget, upsId: string): Promise<"skipped"> {
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

/** The timeline's lane of a target: a Proxmox node's own name, else the target's. */
export function laneOf(target: PlannedTarget): string {
  return target.endpoint?.kind === "pve-node" ? target.endpoint.nodeName : target.name;
}

/** Records a call's outcome and its event together. */
async function settleCall(
  ctx: Ctx,
  call: ShutdownCall,
  upsId: string,
  outcome: { state: "sent" | "failed" | "unknown"; detail: string },
  target?: PlannedTarget,
): Promise<void> {
  const name = target?.name ?? call.targetId;
  const message =
    outcome.state === "sent"
      ? `${name}: shutdown sent (${call.request}): ${outcome.detail}`
      : outcome.state === "unknown"
        ? `${name}: shutdown sent, outcome unknown: ${outcome.detail}`
        : `${name}: shutdown FAILED (${call.request}): ${outcome.detail}`;
  if (outcome.state === "unknown") ctx.log(message);
  await ctx.services.db.transaction(async (tx) => {
    // The call's bar on the timeline ends with it.
    await finishOpenActions(tx, ctx.runId, target ? laneOf(target) : call.targetId, {
      outcome: outcome.state === "sent" ? "ok" : outcome.state,
      detail: outcome.detail,
    });
    await tx
      .update(powerShutdownCalls)
      .set({ state: outcome.state, detail: outcome.detail, finishedAt: new Date() })
      .where(eq(powerShutdownCalls.id, call.id));
    await recordPowerEvents(tx, [
      {
        severity: "critical",
        kind: outcome.state === "failed" ? "shutdown.failed" : "shutdown.sent",
        message,
        upsId,
        targetId: call.targetId,
        runId: ctx.runId,
        data: { request: call.request, outcome: outcome.state, detail: outcome.detail },
      },
    ]);
  });
}

function summary(
  plan: ShutdownPlan,
  calls: readonly ShutdownCall[],
  dropped: ReadonlySet<string>,
  skipped: ReadonlySet<string>,
): string {
  const count = (state: ShutdownCall["state"]) => calls.filter((c) => c.state === state).length;
  const parts = [
    [count("sent"), "sent"],
    [count("unknown"), "sent with outcome unknown"],
    [count("failed"), "failed"],
    [count("would_send"), "would have been sent (dry-run)"],
    [skipped.size, "not sent (unreachable or already called)"],
    [dropped.size, "left out (mains back)"],
  ] as const;
  const text = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
  return `${plan.targets.length} target(s): ${text.join(", ") || "nothing to do"}`;
}
