import { eq } from "drizzle-orm";
import { upsDevices } from "@/lib/db/schema";
import { advance, fail, type Step } from "@/lib/pipeline/step";
import { readSecret } from "@/lib/power/config/ups-secret-store";
import { describeUpsSource, joinUpsSource } from "@/lib/power/config/ups-source-config";
import {
  actionsOfRun,
  OUTPUT_CYCLE_LABEL,
  recordInstantAction,
  startAction,
} from "@/lib/power/records/run-actions";
import { recordPowerEvents, type PowerEventKind } from "@/lib/power/records/power-events";
import { loadTargets } from "@/lib/power/targets/load-targets";
import { probeTarget } from "@/lib/power/targets/shutdown-call";
import { sendNutInstantCommand } from "@/lib/power/ups/nut/instant-command";
import { NutConnectionPool } from "@/lib/power/ups/nut/pool";
import type { TUpsSourceConfig, UpsReading } from "@/lib/power/ups/reading";
import { createUpsSource } from "@/lib/power/ups/source";
import { isDrill } from "./drill-mark";
import { decideOutputCycle, type OutputCycleFacts } from "./output-cycle-decision";
import type { PowerServices } from "./services";
import { armedNow } from "./shut-down-targets";
import { NO_PLAN, type ShutdownInput, type ShutdownPlan } from "./shutdown-plan";

/** The NUT instant command: "Turn off the load possibly after a delay and return when power is back" (NUT docs/nut-names.txt). */
export const OUTPUT_CYCLE_COMMAND = "shutdown.return";
const PROBE_TIMEOUT_MS = 2000;
const READ_DEADLINE_MS = 5000;
const COMMAND_DEADLINE_MS = 10_000;

type Ctx = Parameters<Step<PowerServices>["visit"]>[0];

/**
 * The optional last step of a shutdown (off by default, per UPS): once every target fed by the
 * UPS that fired was seen down (VerifyTargetsDown, the step before), asks the UPS to turn its
 * output off and on again when mains returns, so hosts whose BIOS powers on after AC loss come
 * back without a controller. The rows of ./output-cycle-decision.ts decide; right before sending,
 * every target is probed again and the UPS read afresh. Recorded as an action on the UPS's lane
 * and as an event: sent (upsd accepted it), refused (with the reason), or would send.
 *
 * The outcome never fails the run: the shutdown it follows succeeded, and a failed run would let
 * the monitor start another. A refusal or a failure is a `failed` action and a warning or
 * critical event (notified), never a success mark.
 */
export const cycleUpsOutput: Step<PowerServices> = {
  name: "CycleUpsOutput",
  maxDuration: () => 60,
  async visit(ctx) {
    const { db } = ctx.services;
    const plan = ctx.context.get<ShutdownPlan>("plan");
    const input = ctx.context.get<ShutdownInput>("input");
    if (!plan || !input) return fail(NO_PLAN);
    const upsId = input.trigger.upsId;
    const [device] = await db.select().from(upsDevices).where(eq(upsDevices.id, upsId));
    if (!device) return advance("the UPS that fired was removed: no output cycle");
    const lane = device.name;
    const label = `${OUTPUT_CYCLE_LABEL}${device.name}`;
    if (!device.outputCycle) {
      const line = `output cycle of ${device.name}: off (the UPS's setting); nothing sent`;
      ctx.log(line);
      return advance(line);
    }
    // A visit after a worker died mid-step: never ask the UPS twice.
    const earlier = (await actionsOfRun(db, ctx.runId)).filter((a) => a.label === label);
    if (earlier.length > 0) {
      return advance(
        `output cycle of ${device.name} already handled in this run (${earlier.at(-1)!.outcome ?? "in flight when the worker stopped"}); not asked again`,
      );
    }

    const source = device.source;
    let config: TUpsSourceConfig;
    try {
      config = joinUpsSource(source, await readSecret(db, device.secretCredentialId));
    } catch (error) {
      // Stored settings that no longer parse: said once, never a step that throws until the
      // run fails (a failed run would let the monitor start another).
      const reason = error instanceof Error ? error.message : String(error);
      const line = `${device.name}: output cycle not asked: ${reason}`;
      ctx.log(line);
      await db.transaction(async (tx) => {
        await recordInstantAction(tx, {
          runId: ctx.runId,
          lane,
          label,
          outcome: "failed",
          detail: `not sent: ${reason}`,
        });
        await recordEvent(tx, ctx, upsId, "ups_cycle.refused", "warning", line, { reason });
      });
      return advance(line);
    }
    const nut = config.type === "nut" ? config : null;
    // The exchange is logged line by line with the password masked; mask it in the log anyway.
    if (nut?.password) ctx.services.maskSecret(nut.password);
    const request = nut
      ? `INSTCMD ${nut.upsName} ${OUTPUT_CYCLE_COMMAND} to ${describeUpsSource(source)}`
      : `UPS-MIB output cycle on ${describeUpsSource(source)}`;

    const all = await loadTargets(db);
    const fed = all.filter((t) => t.feeds.some((f) => f.upsId === upsId));
    const left = new Set([
      ...(ctx.context.get<string[]>("dropped") ?? []),
      ...(ctx.context.get<string[]>("handedBack") ?? []),
      ...(ctx.context.get<string[]>("skipped") ?? []),
    ]);
    const inRun = new Set(
      plan.targets.filter((t) => !left.has(t.id) && t.endpoint).map((t) => t.id),
    );
    const facts: OutputCycleFacts = {
      enabled: true,
      upsName: device.name,
      consoleHost: fed.find((t) => t.runsConsole)?.name ?? null,
      source:
        config.type === "nut"
          ? {
              type: "nut",
              hasCredentials: (config.username ?? "") !== "" && (config.password ?? "") !== "",
            }
          : { type: "snmp", version: config.version },
      notInRun: fed.filter((t) => !inRun.has(t.id)).map((t) => t.name),
      drill: isDrill(input),
      armed: await armedNow(ctx, plan),
    };
    let decision = decideOutputCycle(facts);
    if (decision.kind === "check") {
      const watch = ctx.context.get<Record<string, { downAt?: string }>>("verify") ?? {};
      facts.notSeenDown = fed.filter((t) => !watch[t.id]?.downAt).map((t) => t.name);
      facts.stillAnswering = await stillAnswering(fed);
      facts.reading = toFact(await readNow(config));
      decision = decideOutputCycle(facts);
    }

    switch (decision.kind) {
      case "off":
      case "check":
        return advance(`output cycle of ${device.name}: nothing sent`);
      case "would": {
        const line = `would ask ${device.name} to cycle its output (${request}) — ${decision.why}`;
        ctx.log(line);
        await db.transaction(async (tx) => {
          await recordInstantAction(tx, {
            runId: ctx.runId,
            lane,
            label,
            request,
            outcome: "would-do",
            detail: decision.why,
          });
          await recordEvent(tx, ctx, upsId, "ups_cycle.would_send", "info", line, { request });
        });
        return advance(line);
      }
      case "refuse": {
        const line = `${device.name}: output cycle not asked: ${decision.reason}`;
        ctx.log(line);
        await db.transaction(async (tx) => {
          await recordInstantAction(tx, {
            runId: ctx.runId,
            lane,
            label,
            request,
            outcome: "failed",
            detail: `not sent: ${decision.reason}`,
          });
          await recordEvent(tx, ctx, upsId, "ups_cycle.refused", "warning", line, {
            request,
            reason: decision.reason,
          });
        });
        return advance(line);
      }
      case "send":
        break;
    }

    // Only NUT reaches here (the table refuses SNMP).
    const action = await startAction(db, { runId: ctx.runId, lane, label, request });
    ctx.log(`asking ${device.name} to cycle its output: ${request}`);
    const result = await sendNutInstantCommand(nut!, OUTPUT_CYCLE_COMMAND, COMMAND_DEADLINE_MS);
    for (const line of result.exchange) ctx.log(`  ${line}`);
    if (result.kind === "accepted") {
      const { shutdownSeconds, startSeconds } = result.delays;
      const detail =
        `upsd answered ${result.answer}: the UPS turns its output off ${shutdownSeconds === null ? "after its shutdown delay" : `${shutdownSeconds} s after the command (ups.delay.shutdown)`}` +
        ` and on again when mains returns${startSeconds === null ? "" : ` (after ups.delay.start, ${startSeconds} s)`}`;
      const line = `${device.name}: asked to cycle its output; ${detail}`;
      await db.transaction(async (tx) => {
        await action.finish({ outcome: "ok", detail });
        await recordEvent(tx, ctx, upsId, "ups_cycle.sent", "warning", line, {
          request,
          answer: result.answer,
          delays: result.delays,
        });
      });
      return advance(line);
    }
    const line = `${device.name}: output cycle failed: ${result.message}`;
    await db.transaction(async (tx) => {
      await action.finish({
        outcome: result.kind === "unanswered" && result.maybeSent ? "unknown" : "failed",
        detail: result.message,
      });
      await recordEvent(tx, ctx, upsId, "ups_cycle.failed", "critical", line, {
        request,
        ...(result.kind === "refused" ? { code: result.code } : {}),
      });
    });
    ctx.log(line);
    return advance(line);
  },
};

/** Every target fed by the UPS that answers a probe now, or cannot be asked at all. */
async function stillAnswering(fed: Awaited<ReturnType<typeof loadTargets>>): Promise<string[]> {
  const answers = await Promise.all(
    fed.map(async (target) => {
      if (!target.endpoint)
        return `${target.name} (cannot be asked: ${target.problem ?? "no address"})`;
      const probe = await probeTarget(target.endpoint, PROBE_TIMEOUT_MS);
      return probe.answers ? target.name : null;
    }),
  );
  return answers.filter((name): name is string => name !== null);
}

/**
 * A fresh reading on a connection of its own, without LOGIN: the monitor's login and its
 * connection stay as they are.
 */
async function readNow(config: TUpsSourceConfig): Promise<UpsReading> {
  const pool = new NutConnectionPool();
  const source = createUpsSource(config, { deadlineMs: READ_DEADLINE_MS, nutPool: pool });
  try {
    await source.setNeeded?.(false);
    return await source.read();
  } finally {
    await source.close();
  }
}

function toFact(reading: UpsReading): OutputCycleFacts["reading"] {
  return reading.kind === "reading"
    ? { kind: "reading", onBattery: reading.onBattery }
    : { kind: "unreliable", reason: reading.reason };
}

function recordEvent(
  tx: Parameters<typeof recordPowerEvents>[0],
  ctx: Ctx,
  upsId: string,
  kind: PowerEventKind,
  severity: "info" | "warning" | "critical",
  message: string,
  data: Record<string, unknown>,
) {
  return recordPowerEvents(tx, [{ severity, kind, message, upsId, runId: ctx.runId, data }]);
}
