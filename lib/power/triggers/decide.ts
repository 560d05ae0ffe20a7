import type { UpsReading } from "@/lib/power/ups/reading";
import type { Thresholds, TriggerSettings } from "@/lib/power/settings";
import { formatDuration } from "@/lib/logs/text";
import type { Latch, StageLatch, TriggerKind, UpsMonitorState, UpsValues } from "./state";

/**
 * THE trigger decision, shaped like the spec's table. Pure: the previous state, one new reading,
 * the UPS's effective thresholds and the console's clock in; the next state, the events to
 * record and whether a trigger fired out. The monitor persists what comes out.
 *
 * | reading                    | what happens                                                    |
 * | -------------------------- | --------------------------------------------------------------- |
 * | on battery                 | first that fires triggers: LB/FSD · runtime < N · charge < N %  |
 * |                            | · on battery ≥ N s by the console's clock (set at mains→battery) |
 * | on mains                   | never triggers; a latch releases after N s of unbroken mains    |
 * | unreliable                 | alarm only; opt-in: N s without contact, last seen on battery   |
 *
 * A latch holds until released: while it holds and the UPS is on battery, it demands shutdown.
 *
 * Consolidating clusters this UPS feeds have a first stage of their own: on battery, before the
 * trigger fired, the first of the cluster's first thresholds that fires latches a stage latch
 * (same rows, same order, lowBattery aside: that is the trigger's own). It holds and releases
 * as the trigger's latch does; while it holds on battery it demands the cluster's first stage.
 * Once the trigger fired no first stage begins: the final threshold came first.
 */

export type MonitorEventKind =
  | "ups.on_battery"
  | "ups.mains_back"
  | "ups.low_battery"
  | "ups.unreachable"
  | "ups.reachable"
  | "trigger.fired"
  | "latch.released"
  | "consolidate.fired"
  | "consolidate.released";

/** A consolidating cluster fed by the UPS: its first threshold. */
export type StageThreshold = { clusterId: string; name: string; firstThreshold: Thresholds };

export type PowerEventDraft = {
  at: Date;
  severity: "info" | "warning" | "critical";
  kind: MonitorEventKind;
  message: string;
  data?: Record<string, unknown>;
};

export type DecisionInput = {
  ups: { name: string };
  previous: UpsMonitorState;
  reading: UpsReading;
  triggers: TriggerSettings;
  /** Consolidating clusters this UPS feeds (none: no first stage to decide). */
  stages?: readonly StageThreshold[];
  now: Date;
};

export type Decision = {
  state: UpsMonitorState;
  events: PowerEventDraft[];
  /** The trigger that latched with this reading, if one did. */
  fired: Latch | null;
  /** The latch holds and the UPS is (last seen) on battery: its targets are due. */
  demandsShutdown: boolean;
  /** A stage latch holds and the UPS is (last seen) on battery: those first stages are due. */
  demandsFirstStage: boolean;
};

export function decide(input: DecisionInput): Decision {
  const { reading } = input;
  const outcome =
    reading.kind === "reading" ? decideReliable(input, reading) : decideUnreliable(input, reading);
  const onBattery = outcome.state.lastReading?.onBattery === true;
  return {
    ...outcome,
    demandsShutdown: outcome.state.latch !== null && onBattery,
    demandsFirstStage: Object.keys(outcome.state.stages).length > 0 && onBattery,
  };
}

type Outcome = Omit<Decision, "demandsShutdown" | "demandsFirstStage">;

function decideReliable(input: DecisionInput, reading: UpsValues): Outcome {
  const { previous, now, triggers, ups } = input;
  const events: PowerEventDraft[] = [];
  const event = (
    severity: PowerEventDraft["severity"],
    kind: MonitorEventKind,
    message: string,
    data?: Record<string, unknown>,
  ) =>
    events.push({
      at: now,
      severity,
      kind,
      message: `${ups.name}: ${message}`,
      ...(data ? { data } : {}),
    });

  if (previous.alarm) {
    event(
      "info",
      "ups.reachable",
      `answering again after ${span(seconds(now, previous.alarm.since))} without a reliable reading`,
    );
  }

  const wasOnBattery = previous.lastReading?.onBattery ?? null;
  let { onBatterySince, mainsSince } = previous;
  if (reading.onBattery) {
    mainsSince = null;
    if (wasOnBattery !== true || onBatterySince === null) {
      // The console's clock starts now. The UPS's own counter (reportedSecondsOnBattery) is
      // never read here: a stale one once shut hosts down at the start of an outage.
      onBatterySince = now;
      event(
        "warning",
        "ups.on_battery",
        wasOnBattery === null
          ? `on battery when the console first read it (${values(reading)}); time on battery counts from now`
          : `on battery (${values(reading)})`,
        snapshot(reading),
      );
    }
  } else {
    if (wasOnBattery === true) {
      const outage = onBatterySince
        ? ` after ${span(seconds(now, onBatterySince))} on battery`
        : "";
      event(
        "info",
        "ups.mains_back",
        `mains back${outage} (${values(reading)})`,
        snapshot(reading),
      );
    }
    onBatterySince = null;
    if (wasOnBattery !== false || mainsSince === null) mainsSince = now;
  }
  if (reading.lowBattery && previous.lastReading?.lowBattery !== true) {
    event(
      "critical",
      "ups.low_battery",
      `reports low battery (${values(reading)})`,
      snapshot(reading),
    );
  }

  let latch = previous.latch;
  let fired: Latch | null = null;
  if (reading.onBattery && latch === null) {
    const firing = firstFiring(reading, onBatterySince!, triggers, now);
    if (firing) {
      latch = fired = { ...firing, at: now, reading };
      event("critical", "trigger.fired", `trigger fired: ${firing.reason}`, {
        trigger: firing.trigger,
        ...snapshot(reading),
      });
    }
  }
  if (
    latch !== null &&
    !reading.onBattery &&
    mainsSince !== null &&
    seconds(now, mainsSince) >= triggers.latchReleaseAfterStableMainsSeconds
  ) {
    event(
      "info",
      "latch.released",
      `latch released after ${span(seconds(now, mainsSince))} of stable mains (it fired ${latch.at.toISOString()}: ${latch.reason})`,
      { trigger: latch.trigger },
    );
    latch = null;
  }

  let stages = previous.stages;
  if (reading.onBattery && latch === null) {
    for (const stage of input.stages ?? []) {
      if (stages[stage.clusterId]) continue;
      const firing = firstFiring(
        reading,
        onBatterySince!,
        { lowBattery: false, ...stage.firstThreshold },
        now,
      );
      if (!firing) continue;
      const latched: StageLatch = { ...firing, at: now };
      stages = { ...stages, [stage.clusterId]: latched };
      event(
        "critical",
        "consolidate.fired",
        `first threshold of cluster ${stage.name} fired: ${firing.reason}: its guests move to the node that stays and the other nodes go down`,
        { clusterId: stage.clusterId, trigger: firing.trigger, ...snapshot(reading) },
      );
    }
  }
  const held = Object.entries(stages);
  if (
    held.length > 0 &&
    !reading.onBattery &&
    mainsSince !== null &&
    seconds(now, mainsSince) >= triggers.latchReleaseAfterStableMainsSeconds
  ) {
    for (const [clusterId, stage] of held) {
      const name = input.stages?.find((s) => s.clusterId === clusterId)?.name ?? clusterId;
      event(
        "info",
        "consolidate.released",
        `first-stage latch of cluster ${name} released after ${span(seconds(now, mainsSince))} of stable mains (it fired ${stage.at.toISOString()}: ${stage.reason})`,
        { clusterId, trigger: stage.trigger },
      );
    }
    stages = {};
  }

  return {
    state: {
      reachable: true,
      lastReading: reading,
      onBatterySince,
      mainsSince,
      latch,
      stages,
      alarm: null,
    },
    events,
    fired,
  };
}

function decideUnreliable(
  input: DecisionInput,
  reading: Extract<UpsReading, { kind: "unreliable" }>,
): Outcome {
  const { previous, now, triggers, ups } = input;
  const events: PowerEventDraft[] = [];
  const lastSeenOnBattery = previous.lastReading?.onBattery === true;
  const alarm = previous.alarm ?? { since: now, reason: reading.reason };
  if (!previous.alarm) {
    events.push({
      at: now,
      severity: lastSeenOnBattery ? "critical" : "warning",
      kind: "ups.unreachable",
      message: `${ups.name}: no reliable reading: ${reading.reason}${lastSeenOnBattery ? " (last seen on battery)" : ""}`,
      data: { reason: reading.reason, lastSeenOnBattery },
    });
  }

  let latch = previous.latch;
  let fired: Latch | null = null;
  const after = triggers.unreachableShutdownAfterSeconds;
  // Counted from the first failed read the console saw, never from the last contact: a worker
  // that was down for a while must not count its own absence as lost contact.
  if (latch === null && lastSeenOnBattery && after !== null && seconds(now, alarm.since) >= after) {
    const reason = `no reliable reading for ${span(seconds(now, alarm.since))} (opt-in after ${span(after)}) while last seen on battery: ${reading.reason}`;
    latch = fired = { trigger: "unreachable_on_battery", at: now, reason, reading: null };
    events.push({
      at: now,
      severity: "critical",
      kind: "trigger.fired",
      message: `${ups.name}: trigger fired: ${reason}`,
      data: { trigger: "unreachable_on_battery", reason: reading.reason },
    });
  }
  return {
    state: { ...previous, reachable: false, latch, alarm },
    events,
    fired,
  };
}

/** The first row of the table that fires, in the spec's order. */
function firstFiring(
  reading: UpsValues,
  onBatterySince: Date,
  triggers: Pick<TriggerSettings, "lowBattery" | keyof Thresholds>,
  now: Date,
): { trigger: TriggerKind; reason: string } | null {
  if (triggers.lowBattery && reading.lowBattery) {
    return { trigger: "low_battery", reason: `the UPS reports low battery (${reading.rawStatus})` };
  }
  const runtime = triggers.runtimeBelowSeconds;
  if (runtime !== null && reading.runtimeSeconds !== null && reading.runtimeSeconds < runtime) {
    return {
      trigger: "runtime",
      reason: `runtime ${span(reading.runtimeSeconds)} is below ${span(runtime)}`,
    };
  }
  const charge = triggers.chargeBelowPercent;
  if (charge !== null && reading.chargePercent !== null && reading.chargePercent < charge) {
    return { trigger: "charge", reason: `charge ${reading.chargePercent} % is below ${charge} %` };
  }
  const onBatteryFor = triggers.onBatteryForSeconds;
  const elapsed = seconds(now, onBatterySince);
  if (onBatteryFor !== null && elapsed >= onBatteryFor) {
    return {
      trigger: "on_battery_for",
      reason: `on battery for ${span(elapsed)} by the console's clock (limit ${span(onBatteryFor)})`,
    };
  }
  return null;
}

function seconds(now: Date, since: Date): number {
  return Math.max(0, (now.getTime() - since.getTime()) / 1000);
}

function values(reading: UpsValues): string {
  const parts = [reading.rawStatus];
  if (reading.chargePercent !== null) parts.push(`charge ${reading.chargePercent} %`);
  if (reading.runtimeSeconds !== null) parts.push(`runtime ${span(reading.runtimeSeconds)}`);
  return parts.join(", ");
}

function snapshot(reading: UpsValues): Record<string, unknown> {
  return {
    onBattery: reading.onBattery,
    lowBattery: reading.lowBattery,
    chargePercent: reading.chargePercent,
    runtimeSeconds: reading.runtimeSeconds,
    rawStatus: reading.rawStatus,
  };
}

function span(seconds: number): string {
  return formatDuration(seconds * 1000);
}
