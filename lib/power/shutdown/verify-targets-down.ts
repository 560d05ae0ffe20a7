import { advance, fail, poll, type Step } from "@/lib/pipeline/step";
import { recordPowerEvents } from "@/lib/power/events";
import { probeTarget } from "@/lib/power/targets/shutdown-call";
import { callsOfRun } from "./calls";
import { NO_PLAN, type ShutdownInput, type ShutdownPlan } from "./plan";
import type { PowerServices } from "./services";

/** Two silent probes in a row, this far apart, before a target counts as no longer answering. */
const SILENT_CONFIRM_MS = 1000;
const PROBE_TIMEOUT_MS = 2000;

type Watch = Record<string, { silentSince?: string; downAt?: string; why?: string }>;

/**
 * Armed runs only: asks every target that was sent its shutdown until its API stops answering
 * (refused, cut or silent, twice in a row) or the plan's time to go down is over. The result
 * names which went down and which still answer; a target still answering, or a call that
 * failed, fails the run — nothing here reads as success unless it happened.
 */
export const verifyTargetsDown: Step<PowerServices> = {
  name: "VerifyTargetsDown",
  maxDuration: () => 3700,
  async visit(ctx) {
    const { db } = ctx.services;
    const plan = ctx.context.get<ShutdownPlan>("plan");
    const input = ctx.context.get<ShutdownInput>("input");
    if (!plan || !input) return fail(NO_PLAN);
    const calls = await callsOfRun(db, ctx.runId);
    const sent = calls.filter((c) => c.state === "sent" || c.state === "unknown");
    const failed = calls.filter((c) => c.state === "failed");
    const nameOf = (id: string) => plan.targets.find((t) => t.id === id)?.name ?? id;
    if (sent.length === 0 && failed.length === 0) {
      return advance(
        calls.some((c) => c.state === "would_send")
          ? "dry-run: nothing was sent, nothing to verify"
          : "nothing was sent, nothing to verify",
      );
    }

    const watch: Watch = ctx.context.get<Watch>("verify") ?? {};
    const waiting = sent.filter((c) => !watch[c.targetId]?.downAt);
    const now = new Date();
    await Promise.all(
      waiting.map(async (call) => {
        const target = plan.targets.find((t) => t.id === call.targetId);
        if (!target?.endpoint) return;
        const probe = await probeTarget(target.endpoint, PROBE_TIMEOUT_MS);
        const entry = (watch[call.targetId] ??= {});
        if (probe.answers) {
          delete entry.silentSince;
          return;
        }
        entry.why = probe.why;
        entry.silentSince ??= now.toISOString();
        if (now.getTime() - Date.parse(entry.silentSince) < SILENT_CONFIRM_MS) return;
        entry.downAt = entry.silentSince;
        const after = call.finishedAt
          ? ` (${Math.round((Date.parse(entry.downAt) - call.finishedAt.getTime()) / 1000)} s after its call)`
          : "";
        const line = `${target.name}: stopped answering at ${entry.downAt}${after}: ${probe.why}`;
        ctx.log(line);
        await recordPowerEvents(db, [
          {
            severity: "info",
            kind: "target.down",
            message: line,
            upsId: input.trigger.upsId,
            targetId: target.id,
            runId: ctx.runId,
          },
        ]);
      }),
    );
    ctx.context.set("verify", watch);

    const down = sent.filter((c) => watch[c.targetId]?.downAt);
    const up = sent.filter((c) => !watch[c.targetId]?.downAt);
    const failures = failed.map(
      (c) => `${nameOf(c.targetId)}: call failed (${c.detail ?? "no detail"})`,
    );
    if (up.length === 0) {
      const downText = `${down.length} target(s) stopped answering: ${down.map((c) => nameOf(c.targetId)).join(", ")}`;
      return failures.length === 0
        ? advance(downText)
        : fail(`${failures.join("; ")}; ${downText}`);
    }
    if (ctx.elapsedSeconds < plan.targetDownSeconds) {
      return poll(
        1,
        `waiting for ${up.map((c) => nameOf(c.targetId)).join(", ")} to stop answering`,
      );
    }
    const stillUp = up.map((c) => nameOf(c.targetId));
    const line = `still answering ${plan.targetDownSeconds} s after the shutdown: ${stillUp.join(", ")}`;
    await recordPowerEvents(
      db,
      up.map((c) => ({
        severity: "critical" as const,
        kind: "target.still_up" as const,
        message: `${nameOf(c.targetId)}: still answering ${plan.targetDownSeconds} s after its shutdown call`,
        upsId: input.trigger.upsId,
        targetId: c.targetId,
        runId: ctx.runId,
      })),
    );
    return fail([line, ...failures].join("; "));
  },
};
