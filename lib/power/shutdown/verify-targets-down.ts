import { advance, fail, poll, type Step } from "@/lib/pipeline/step";
import { recordPowerEvents } from "@/lib/power/records/power-events";
import { probeTarget } from "@/lib/power/targets/shutdown-call";
import {
  attemptDue,
  attemptShutdown,
  outageCalls,
  recordSeenDown,
  standingOf,
  type CallStanding,
} from "./call-attempts";
import { callsOfRun } from "./calls";
import {
  NO_PLAN,
  type PlannedTarget,
  type ShutdownInput,
  type ShutdownPlan,
} from "./shutdown-plan";
import type { PowerServices } from "./services";
import { armedNow } from "./shut-down-targets";

/** Two silent probes in a row, this far apart, before a target counts as no longer answering. */
const SILENT_CONFIRM_MS = 1000;
const PROBE_TIMEOUT_MS = 2000;

type Watch = Record<
  string,
  {
    /** Its clock for giving up: this run's first call of it, or when this step began to watch. */
    since?: string;
    silentSince?: string;
    downAt?: string;
    why?: string;
  }
>;

/**
 * Armed runs only: a target is done when it is **seen down**, not when a request was sent. Every
 * target of the run (reached, not left out) is probed until its API stops answering (refused,
 * cut or silent, twice in a row) or its time to go down is over — and while it still answers
 * and no call of it was accepted (failed, unanswered, interrupted), the call is sent again with
 * backoff (./call-attempts.ts). The result names which went down and which still answer; a
 * target still answering at its deadline fails the run — nothing here reads as success unless
 * it happened.
 */
export const verifyTargetsDown: Step<PowerServices> = {
  name: "VerifyTargetsDown",
  maxDuration: () => 3700,
  async visit(ctx) {
    const { db } = ctx.services;
    const plan = ctx.context.get<ShutdownPlan>("plan");
    const input = ctx.context.get<ShutdownInput>("input");
    if (!plan || !input) return fail(NO_PLAN);
    const upsId = input.trigger.upsId;
    const left = new Set([
      ...(ctx.context.get<string[]>("dropped") ?? []),
      ...(ctx.context.get<string[]>("handedBack") ?? []),
      ...(ctx.context.get<string[]>("skipped") ?? []),
    ]);
    const own = await callsOfRun(db, ctx.runId);
    const candidates = plan.targets.filter((t) => !left.has(t.id) && t.endpoint);
    const calls = await outageCalls(db, candidates);
    // What this step watches: the targets some run of this outage really called.
    const targets = candidates.filter((t) => calls.some((c) => c.targetId === t.id));
    if (targets.length === 0) {
      return advance(
        own.some((c) => c.state === "would_send")
          ? "dry-run: nothing was sent, nothing to verify"
          : "nothing was sent, nothing to verify",
      );
    }

    const armed = await armedNow(ctx, plan);
    const watch: Watch = ctx.context.get<Watch>("verify") ?? {};
    const now = new Date();
    const deadlineOf = (id: string) =>
      Date.parse(watch[id]!.since!) + plan.targetDownSeconds * 1000;
    // Seen down in this visit: recorded together at its end (one statement for all, not one
    // per target: 1000 targets went down in one visit in bench:power --targets).
    const seen: Array<{ target: PlannedTarget; standing: CallStanding; why: string }> = [];
    await Promise.all(
      targets
        .filter((t) => !watch[t.id]?.downAt)
        .map(async (target) => {
          const standing = standingOf(calls, target.id, ctx.runId);
          const entry = (watch[target.id] ??= {});
          entry.since ??= (standing.firstOwnAt ?? now).toISOString();
          if (standing.seenDownAt) {
            // Seen down already (its cluster's sequence, or another run of this outage).
            entry.downAt = standing.seenDownAt.toISOString();
            entry.why ??= "seen down before this step";
            seen.push({ target, standing, why: entry.why });
            return;
          }
          const probe = await probeTarget(target.endpoint!, PROBE_TIMEOUT_MS);
          if (probe.answers) {
            delete entry.silentSince;
            if (armed && now.getTime() < deadlineOf(target.id) && attemptDue(standing, now)) {
              await attemptShutdown(ctx, target, upsId);
            }
            return;
          }
          entry.why = probe.why;
          entry.silentSince ??= now.toISOString();
          if (now.getTime() - Date.parse(entry.silentSince) < SILENT_CONFIRM_MS) return;
          entry.downAt = entry.silentSince;
          seen.push({ target, standing, why: probe.why });
        }),
    );
    await seenDown(ctx, watch, seen, upsId);
    ctx.context.set("verify", watch);

    const down = targets.filter((t) => watch[t.id]?.downAt);
    const up = targets.filter((t) => !watch[t.id]?.downAt);
    const resent = own.filter((c) => c.attempt > 1).length;
    const again = resent > 0 ? ` (${resent} call(s) sent again after a failure)` : "";
    if (up.length === 0) {
      return advance(
        `${down.length} of ${targets.length} target(s) seen down: ${down.map((t) => t.name).join(", ")}${again}`,
      );
    }
    const waiting = up.filter((t) => now.getTime() < deadlineOf(t.id));
    if (waiting.length > 0) {
      return poll(1, `waiting for ${waiting.map((t) => t.name).join(", ")} to stop answering`);
    }
    const latest = await outageCalls(db, up);
    const why = (t: PlannedTarget) => {
      const standing = standingOf(latest, t.id, ctx.runId);
      if (standing.accepted) return `${t.name} (its call was accepted)`;
      const last = latest.filter((c) => c.targetId === t.id).at(-1);
      return `${t.name} (no call accepted; last: ${last?.detail ?? "no detail"})`;
    };
    await recordPowerEvents(
      db,
      up.map((t) => ({
        severity: "critical" as const,
        kind: "target.still_up" as const,
        message: `${why(t)}: still answering ${plan.targetDownSeconds} s after its first shutdown call`,
        upsId,
        targetId: t.id,
        runId: ctx.runId,
      })),
    );
    return fail(
      `${up.length} of ${targets.length} target(s) still answering after their time to go down: ${up.map(why).join("; ")}` +
        (down.length > 0 ? `; seen down: ${down.map((t) => t.name).join(", ")}` : "") +
        again,
    );
  },
};

/** Records the targets seen down in this visit, their calls and events, in one transaction. */
async function seenDown(
  ctx: Parameters<Step<PowerServices>["visit"]>[0],
  watch: Watch,
  seen: ReadonlyArray<{ target: PlannedTarget; standing: CallStanding; why: string }>,
  upsId: string,
): Promise<void> {
  if (seen.length === 0) return;
  const lines = seen.map(({ target, standing, why }) => {
    const at = watch[target.id]!.downAt!;
    const after = standing.firstOwnAt
      ? ` (${Math.round((Date.parse(at) - standing.firstOwnAt.getTime()) / 1000)} s after its first call)`
      : "";
    return { target, at, line: `${target.name}: stopped answering at ${at}${after}: ${why}` };
  });
  for (const { line } of lines) ctx.log(line);
  await ctx.services.db.transaction(async (tx) => {
    await recordSeenDown(
      tx,
      lines.map(({ target, at }) => ({ target, at: new Date(at) })),
    );
    await recordPowerEvents(
      tx,
      lines.map(({ target, line }) => ({
        severity: "info" as const,
        kind: "target.down" as const,
        message: line,
        upsId,
        targetId: target.id,
        runId: ctx.runId,
      })),
    );
  });
}
