import { and, asc, eq, gte, inArray, lt, sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerShutdownCalls } from "@/lib/db/schema";
import type { PowerMode } from "@/lib/power/config/settings";
import { finishOpenActions, startAction } from "@/lib/power/records/run-actions";
import { errorMessage } from "@/lib/pipeline/engine";
import type { StepContext } from "@/lib/pipeline/step";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import { sendShutdown } from "@/lib/power/targets/shutdown-call";
import type { ShutdownCall } from "./calls";
import type { PlannedTarget } from "./shutdown-plan";
import type { PowerServices } from "./services";

/**
 * A target's shutdown calls in one outage: claimed, sent under their deadline, settled — and
 * sent again when one fails or goes unanswered. A target is done when it is seen down, not when
 * a request went out; a host left up loses power hard, while a second `shutdown` to a node
 * already going down is harmless. So the rule is "at most one **accepted** call per target per
 * outage" (the partial unique index `power_shutdown_calls_one_accepted_call`, across runs): a
 * call in flight or accepted blocks another, a failed, unanswered or interrupted one does not.
 */

type Ctx = StepContext<PowerServices>;

/** A claim still `sending` this long after its own deadline was left by a worker that died. */
const STALE_AFTER_DEADLINE = sql`interval '5 seconds'`;

/** Pause after the n-th failed attempt in a row: 1, 2, 4, then every 5 s (the battery runs). */
export function retryDelayMs(failedInARow: number): number {
  return Math.min(5000, 1000 * 2 ** Math.max(0, failedInARow - 1));
}

export type AttemptOutcome =
  | { kind: "accepted"; detail: string }
  | { kind: "failed"; detail: string }
  /** Another run's call is in flight or was accepted: not sent again from here. */
  | { kind: "elsewhere"; runId: string; state: "sending" | "sent" }
  /** No way to reach it (no address, token or pin): nothing can be sent. */
  | { kind: "unreachable"; why: string };

/** What the outage's calls of one target say (every run's, real calls only). */
export type CallStanding = {
  accepted: ShutdownCall | null;
  inFlight: ShutdownCall | null;
  /** Attempts that failed or went unanswered since the last accepted or in-flight one. */
  failedInARow: number;
  lastFinishedAt: Date | null;
  seenDownAt: Date | null;
  /** This run's attempts. */
  ownAttempts: number;
  /** This run's first attempt (its clock for giving up on the target). */
  firstOwnAt: Date | null;
};

/** The real calls of these targets in their outages (every run), oldest first. */
export async function outageCalls(
  db: Pick<Database, "select">,
  targets: readonly Pick<PlannedTarget, "id" | "dueSince">[],
): Promise<ShutdownCall[]> {
  if (targets.length === 0) return [];
  const rows = await db
    .select()
    .from(powerShutdownCalls)
    .where(
      and(
        inArray(
          powerShutdownCalls.targetId,
          targets.map((t) => t.id),
        ),
        inArray(powerShutdownCalls.state, ["sending", "sent", "failed", "unknown"]),
      ),
    )
    .orderBy(asc(powerShutdownCalls.id));
  const outage = new Map(targets.map((t) => [t.id, new Date(t.dueSince).getTime()]));
  return rows.filter((r) => outage.get(r.targetId) === r.dueSince.getTime());
}

/**
 * The calls of these targets, in every state (a dry-run's would-send included), in the outages
 * that began at these times (a call's `dueSince` names its outage): what a consolidating
 * cluster's first stage already called while its latch holds, and which targets an outage saw
 * go down.
 */
export async function callsInOutages(
  db: Pick<Database, "select">,
  targetIds: readonly string[],
  outageStarts: readonly Date[],
): Promise<Array<Pick<ShutdownCall, "targetId" | "dueSince" | "state" | "seenDownAt">>> {
  if (targetIds.length === 0 || outageStarts.length === 0) return [];
  return db
    .select({
      targetId: powerShutdownCalls.targetId,
      dueSince: powerShutdownCalls.dueSince,
      state: powerShutdownCalls.state,
      seenDownAt: powerShutdownCalls.seenDownAt,
    })
    .from(powerShutdownCalls)
    .where(
      and(
        inArray(powerShutdownCalls.targetId, [...targetIds]),
        inArray(powerShutdownCalls.dueSince, [...outageStarts]),
      ),
    );
}

/**
 * The calls of these targets in the outages that began at `since` or later, in every state:
 * what the monitor reads to know which outages are covered (callCovers).
 */
export async function callsSince(
  db: Pick<Database, "select">,
  targetIds: readonly string[],
  since: Date,
): Promise<Array<Pick<ShutdownCall, "targetId" | "dueSince" | "state" | "seenDownAt">>> {
  if (targetIds.length === 0) return [];
  return db
    .select({
      targetId: powerShutdownCalls.targetId,
      dueSince: powerShutdownCalls.dueSince,
      state: powerShutdownCalls.state,
      seenDownAt: powerShutdownCalls.seenDownAt,
    })
    .from(powerShutdownCalls)
    .where(
      and(
        inArray(powerShutdownCalls.targetId, [...targetIds]),
        gte(powerShutdownCalls.dueSince, since),
      ),
    );
}

/**
 * Whether a call covers its target for its outage, so that no new run is started for it: an
 * accepted or in-flight call, or the target seen down. A failed, unanswered or interrupted call
 * does not — its target is due until it is seen down. A rehearsal's would-send covers it only
 * while the console is in dry-run itself.
 */
export function callCovers(
  call: Pick<ShutdownCall, "state" | "seenDownAt">,
  mode: PowerMode,
): boolean {
  if (call.state === "would_send") return mode !== "armed";
  return call.state === "sent" || call.state === "sending" || call.seenDownAt !== null;
}

export function standingOf(
  calls: readonly ShutdownCall[],
  targetId: string,
  runId: string,
): CallStanding {
  const mine = calls.filter((c) => c.targetId === targetId);
  const own = mine.filter((c) => c.runId === runId);
  let failedInARow = 0;
  for (const call of mine) {
    failedInARow = call.state === "failed" || call.state === "unknown" ? failedInARow + 1 : 0;
  }
  const finished = mine.flatMap((c) => (c.finishedAt ? [c.finishedAt.getTime()] : []));
  const down = mine.flatMap((c) => (c.seenDownAt ? [c.seenDownAt.getTime()] : []));
  return {
    accepted: mine.find((c) => c.state === "sent") ?? null,
    inFlight: mine.find((c) => c.state === "sending") ?? null,
    failedInARow,
    lastFinishedAt: finished.length > 0 ? new Date(Math.max(...finished)) : null,
    seenDownAt: down.length > 0 ? new Date(Math.min(...down)) : null,
    ownAttempts: own.length,
    firstOwnAt: own[0]?.startedAt ?? null,
  };
}

/**
 * Whether the target is to be called (again) now: nothing accepted, nothing in flight, not seen
 * down, and — after a failure — its pause over.
 */
export function attemptDue(standing: CallStanding, now: Date): boolean {
  if (standing.accepted || standing.inFlight || standing.seenDownAt) return false;
  if (standing.failedInARow === 0 || !standing.lastFinishedAt) return true;
  return now.getTime() - standing.lastFinishedAt.getTime() >= retryDelayMs(standing.failedInARow);
}

/** The timeline's lane of a target: a Proxmox node's own name, else the target's. */
export function laneOf(target: PlannedTarget): string {
  return target.endpoint?.kind === "pve-node" ? target.endpoint.nodeName : target.name;
}

/**
 * Armed: claims the next attempt, sends it under the call's deadline and records what happened
 * (the attempt's row, its bar on the timeline and its event). Never throws for the target's
 * own failure: that is an outcome, and the caller's sequence goes on.
 */
export async function attemptShutdown(
  ctx: Ctx,
  target: PlannedTarget,
  upsId: string,
): Promise<AttemptOutcome> {
  const { db } = ctx.services;
  if (!target.request || !target.endpoint) {
    return { kind: "unreachable", why: target.problem ?? "no way to reach it" };
  }
  const claimed = await claimAttempt(db, ctx.runId, target);
  if (claimed.kind === "elsewhere") return claimed;
  const { call } = claimed;
  const again = call.attempt > 1 ? ` (attempt ${call.attempt})` : "";
  ctx.log(`${target.name}: ${target.request.line}${again} (deadline ${target.deadlineSeconds} s)`);
  await startAction(db, {
    runId: ctx.runId,
    lane: laneOf(target),
    label: `shutdown ${laneOf(target)}${again}`,
    request: target.request.line,
  });
  const started = performance.now();
  try {
    await sendShutdown(db, target.endpoint, {
      timeoutMs: target.deadlineSeconds * 1000,
      onSecret: ctx.services.maskSecret,
    });
    const detail = `accepted in ${Math.round(performance.now() - started)} ms${again}`;
    ctx.log(`${target.name}: ${detail}`);
    await settleAttempt(ctx, call, upsId, { state: "sent", detail }, target);
    return { kind: "accepted", detail };
  } catch (error) {
    const detail = errorMessage(error);
    ctx.log(
      `${target.name}: FAILED${again}: ${detail}; sent again in ${retryDelayMs(call.attempt) / 1000} s unless it is seen down; going on`,
    );
    await settleAttempt(ctx, call, upsId, { state: "failed", detail }, target);
    return { kind: "failed", detail };
  }
}

type Claim =
  | { kind: "claimed"; call: ShutdownCall }
  | { kind: "elsewhere"; runId: string; state: "sending" | "sent" };

/**
 * The next attempt's claim, in its own committed transaction before anything goes out: a claim
 * left `sending` by a worker that died is settled first (it may have arrived: `unknown`), then
 * the partial unique index lets exactly one run hold the target's call in flight or accepted.
 */
async function claimAttempt(db: Database, runId: string, target: PlannedTarget): Promise<Claim> {
  const dueSince = new Date(target.dueSince);
  return db.transaction(async (tx) => {
    const sameOutage = and(
      eq(powerShutdownCalls.targetId, target.id),
      eq(powerShutdownCalls.dueSince, dueSince),
    );
    await tx
      .update(powerShutdownCalls)
      .set({
        state: "unknown",
        detail:
          "the worker stopped while this call was in flight; it may have arrived; sent again unless the target is seen down",
        finishedAt: sql`now()`,
      })
      .where(
        and(
          sameOutage,
          eq(powerShutdownCalls.state, "sending"),
          lt(powerShutdownCalls.deadlineAt, sql`now() - ${STALE_AFTER_DEADLINE}`),
        ),
      );
    const [count] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(powerShutdownCalls)
      .where(and(eq(powerShutdownCalls.runId, runId), eq(powerShutdownCalls.targetId, target.id)));
    const [call] = await tx
      .insert(powerShutdownCalls)
      .values({
        runId,
        targetId: target.id,
        dueSince,
        attempt: (count?.n ?? 0) + 1,
        state: "sending",
        request: target.request!.line,
        deadlineAt: sql`now() + make_interval(secs => ${target.deadlineSeconds})`,
      })
      .onConflictDoNothing()
      .returning();
    if (call) return { kind: "claimed", call };
    const [holder] = await tx
      .select({ runId: powerShutdownCalls.runId, state: powerShutdownCalls.state })
      .from(powerShutdownCalls)
      .where(and(sameOutage, inArray(powerShutdownCalls.state, ["sending", "sent"])));
    return {
      kind: "elsewhere",
      runId: holder?.runId ?? "?",
      state: holder?.state === "sent" ? "sent" : "sending",
    };
  });
}

/** Records an attempt's outcome, its bar's end and its event together. */
export async function settleAttempt(
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
        data: {
          request: call.request,
          outcome: outcome.state,
          detail: outcome.detail,
          attempt: call.attempt,
        },
      },
    ]);
  });
}

/**
 * Targets seen down: said on their calls of this outage (for every run to see), in one
 * statement however many.
 */
export async function recordSeenDown(
  db: Pick<Database, "execute">,
  seen: ReadonlyArray<{ target: Pick<PlannedTarget, "id" | "dueSince">; at: Date }>,
): Promise<void> {
  if (seen.length === 0) return;
  const at = sql.join(
    seen.map(
      ({ target, at }) =>
        sql`(${target.id}::uuid, ${new Date(target.dueSince).toISOString()}::timestamptz, ${at.toISOString()}::timestamptz)`,
    ),
    sql`, `,
  );
  await db.execute(sql`
    update ${powerShutdownCalls} as c set seen_down_at = s.at
    from (values ${at}) as s(target_id, due_since, at)
    where c.target_id = s.target_id and c.due_since = s.due_since
      and c.state in ('sent', 'failed', 'unknown')`);
}
