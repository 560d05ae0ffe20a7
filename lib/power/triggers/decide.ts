import type { UpsReading } from "@/lib/power/ups/reading";
import type { Thresholds, TriggerSettings } from "@/lib/power/config/settings";
import { formatDuration } from "@/lib/logs/text";
import {
  FINAL_TRIGGER,
  type Latch,
  type PendingTrigger,
  type StageLatch,
  type TriggerKind,
  type UpsMonitorState,
  type UpsValues,
} from "./state";

/**
 * THE trigger decision, shaped like the spec's table. Pure: the previous state, one new reading,
 * the UPS's effective thresholds and the console's clock in; the next state, the events to
 * record and whether a trigger fired out. The monitor persists what comes out.
 *
 * | reading                    | what happens                                                    |
 * | -------------------------- | --------------------------------------------------------------- |
 * | on battery                 | first that fires triggers: LB (FSD with OB) · runtime < N ·     |
 * |                            | charge < N % · on battery ≥ N s by the console's clock          |
 * |                            | — once it has held for the confirmation (below)                 |
 * | on mains                   | never triggers; a latch goes dormant, and releases after N s of |
 * |                            | unbroken mains                                                  |
 * | unreliable                 | alarm only; opt-in: N s without contact, last seen on battery   |
 *
 * **A blip is not an outage.** A row that fires must go on firing, reading after reading, for
 * `confirmSeconds` (default 3 s) before it latches; the UPS's own low battery also latches after
 * two readings in a row (it may come with little time left). A reading without a reliable value
 * neither confirms nor cancels what is pending.
 *
 * A latch holds until released: while it holds, is awake and the UPS is on battery, it demands
 * shutdown. When mains comes back it goes **dormant**: it stays latched (its time still names
 * the outage, so what was called is not called again), but demands nothing until a row fires
 * and holds afresh on battery — after a cancelled run, a 1-s blip inside the latch's release
 * window must not send anything.
 *
 * **Time is monotonic.** Every duration here (on battery for, stable mains for, without contact
 * for, held for) grows by `elapsedMs`, the monotonic time between two readings that the monitor
 * measures; the wall clock `now` is only written down for display. A step of the wall clock
 * neither fires nor delays a trigger.
 *
 * **FSD** (NUT: upsmon's primary declared the end) counts as low battery only together with on
 * battery; `upsmon -c fsd` during NUT maintenance says FSD OL and shuts nothing down, unless the
 * admin turned on `forcedShutdownAlone` knowingly.
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
  /** The wall clock: written into the state and the events, never measured with. */
  now: Date;
  /** Monotonic milliseconds since the previous reading was decided (0 for the very first). */
  elapsedMs: number;
  /**
   * No shutdown run is going on any more (the monitor reads it from the runs): a dormant latch
   * that fires again then starts a **new** outage rather than waking the old one (below).
   * Unknown (no database) reads as false: the old outage goes on, as before.
   */
  outageShutdownOver?: boolean;
};

export type Decision = {
  state: UpsMonitorState;
  events: PowerEventDraft[];
  /** The trigger that latched (or woke from dormant) with this reading, if one did. */
  fired: Latch | null;
  /** The latch holds, is awake and the UPS is (last seen) on battery: its targets are due. */
  demandsShutdown: boolean;
  /** An awake stage latch holds and the UPS is (last seen) on battery: those first stages are due. */
  demandsFirstStage: boolean;
};

export function decide(input: DecisionInput): Decision {
  const reading = weighForcedShutdown(input.reading, input.triggers);
  const outcome =
    reading.kind === "reading" ? decideReliable(input, reading) : decideUnreliable(input, reading);
  const onBattery = outcome.state.lastReading?.onBattery === true;
  const { latch, stages } = outcome.state;
  return {
    ...outcome,
    demandsShutdown: latch !== null && !latch.dormant && onBattery,
    demandsFirstStage: Object.values(stages).some((s) => !s.dormant) && onBattery,
  };
}

type Outcome = Omit<Decision, "demandsShutdown" | "demandsFirstStage">;

/**
 * What FSD counts as: together with on battery, low battery (upsmon's primary declared the
 * end); alone, only a flag — unless the admin turned on `forcedShutdownAlone`, which makes it
 * on battery and low battery whatever else the UPS says (NUT's own clients' reading).
 */
function weighForcedShutdown(reading: UpsReading, triggers: TriggerSettings): UpsReading {
  if (!reading.forcedShutdown) return reading;
  if (reading.kind === "reading") {
    if (reading.onBattery) return { ...reading, lowBattery: true };
    return triggers.forcedShutdownAlone
      ? { ...reading, onBattery: true, lowBattery: true }
      : reading;
  }
  if (!triggers.forcedShutdownAlone) return reading;
  return {
    kind: "reading",
    at: reading.at,
    onBattery: true,
    lowBattery: true,
    forcedShutdown: true,
    chargePercent: null,
    runtimeSeconds: null,
    reportedSecondsOnBattery: null,
    rawStatus: "FSD",
  };
}

function decideReliable(input: DecisionInput, reading: UpsValues): Outcome {
  const { previous, now, triggers, ups, elapsedMs } = input;
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
    const without = (previous.durations.alarmMs ?? 0) + elapsedMs;
    event(
      "info",
      "ups.reachable",
      `answering again after ${span(without / 1000)} without a reliable reading`,
    );
  }

  const wasOnBattery = previous.lastReading?.onBattery ?? null;
  let { onBatterySince, mainsSince } = previous;
  let { onBatteryMs, mainsMs } = previous.durations;
  let latch = previous.latch;
  let stages = previous.stages;
  const pending = { ...previous.pending };
  if (reading.onBattery) {
    mainsSince = null;
    mainsMs = null;
    if (wasOnBattery !== true || onBatterySince === null || onBatteryMs === null) {
      // The console's clock starts now. The UPS's own counter (reportedSecondsOnBattery) is
      // never read here: a stale one once shut hosts down at the start of an outage.
      onBatterySince = now;
      onBatteryMs = 0;
      event(
        "warning",
        "ups.on_battery",
        wasOnBattery === null
          ? `on battery when the console first read it (${values(reading)}); time on battery counts from now`
          : `on battery (${values(reading)})`,
        snapshot(reading),
      );
    } else {
      onBatteryMs += elapsedMs;
    }
  } else {
    if (wasOnBattery === true) {
      const outage =
        onBatteryMs !== null ? ` after ${span((onBatteryMs + elapsedMs) / 1000)} on battery` : "";
      const latched = [latch, ...Object.values(stages)].some((l) => l !== null && !l.dormant);
      event(
        "info",
        "ups.mains_back",
        `mains back${outage} (${values(reading)})` +
          (latched
            ? `; the trigger stays latched but demands nothing more unless one fires and holds for ${span(triggers.confirmSeconds)} on battery again`
            : ""),
        snapshot(reading),
      );
      // Dormant: a blip of battery after this must hold afresh before anything is sent.
      if (latch && !latch.dormant) latch = { ...latch, dormant: true };
      stages = Object.fromEntries(
        Object.entries(stages).map(([id, l]) => [id, l.dormant ? l : { ...l, dormant: true }]),
      );
    }
    onBatterySince = null;
    onBatteryMs = null;
    if (wasOnBattery !== false || mainsSince === null || mainsMs === null) {
      mainsSince = now;
      mainsMs = 0;
    } else {
      mainsMs += elapsedMs;
    }
  }
  if (reading.lowBattery && previous.lastReading?.lowBattery !== true) {
    event(
      "critical",
      "ups.low_battery",
      `reports low battery (${values(reading)})`,
      snapshot(reading),
    );
  }

  let fired: Latch | null = null;
  if (reading.onBattery && (latch === null || latch.dormant)) {
    const held = hold(
      pending[FINAL_TRIGGER],
      firstFiring(reading, onBatteryMs!, triggers),
      elapsedMs,
      now,
    );
    delete pending[FINAL_TRIGGER];
    if (held && !confirmed(held, triggers)) pending[FINAL_TRIGGER] = held;
    else if (held && latch === null) {
      latch = fired = { trigger: held.trigger, reason: held.reason, at: now, reading };
      event("critical", "trigger.fired", `trigger fired: ${held.reason}${heldFor(held)}`, {
        trigger: held.trigger,
        ...snapshot(reading),
      });
    } else if (held && latch && input.outageShutdownOver) {
      // The last outage's shutdown is over and mains came back since: whatever runs now was
      // powered on again (the BIOS after the UPS came back, a person, the way back) and is not
      // covered by a call of that outage. A new time is a new outage: every target is due.
      const before = latch.at;
      latch = fired = { trigger: held.trigger, reason: held.reason, at: now, reading };
      event(
        "critical",
        "trigger.fired",
        `trigger fired: ${held.reason}${heldFor(held)} — a new outage (the shutdown of the one latched ${before.toISOString()} is over): every target is due again, one still off is seen down`,
        { trigger: held.trigger, renewed: true, ...snapshot(reading) },
      );
    } else if (held && latch) {
      latch = fired = { ...latch, dormant: false };
      event(
        "critical",
        "trigger.fired",
        `trigger holds again on battery: ${held.reason}${heldFor(held)}; the shutdown of this outage (latched ${latch.at.toISOString()}) goes on for what is not down yet`,
        { trigger: held.trigger, again: true, ...snapshot(reading) },
      );
    }
  } else if (!reading.onBattery) {
    delete pending[FINAL_TRIGGER];
  }
  const stableMains =
    !reading.onBattery &&
    mainsMs !== null &&
    mainsMs >= triggers.latchReleaseAfterStableMainsSeconds * 1000;
  if (latch !== null && stableMains) {
    event(
      "info",
      "latch.released",
      `latch released after ${span(mainsMs! / 1000)} of stable mains (it fired ${latch.at.toISOString()}: ${latch.reason})`,
      { trigger: latch.trigger },
    );
    latch = null;
  }

  for (const stage of input.stages ?? []) {
    const existing = stages[stage.clusterId];
    if (existing && !existing.dormant) continue;
    // Once the trigger fired no first stage begins: the final threshold came first.
    if (!existing && latch !== null) continue;
    if (!reading.onBattery) {
      delete pending[stage.clusterId];
      continue;
    }
    const held = hold(
      pending[stage.clusterId],
      firstFiring(reading, onBatteryMs!, {
        lowBattery: false,
        ...stage.firstThreshold,
      }),
      elapsedMs,
      now,
    );
    delete pending[stage.clusterId];
    if (!held) continue;
    if (!confirmed(held, triggers)) {
      pending[stage.clusterId] = held;
      continue;
    }
    const renewed = existing !== undefined && input.outageShutdownOver === true;
    const latched: StageLatch =
      existing && !renewed
        ? { ...existing, dormant: false }
        : { trigger: held.trigger, reason: held.reason, at: now };
    stages = { ...stages, [stage.clusterId]: latched };
    event(
      "critical",
      "consolidate.fired",
      existing && !renewed
        ? `first threshold of cluster ${stage.name} holds again on battery: ${held.reason}${heldFor(held)}`
        : renewed
          ? `first threshold of cluster ${stage.name} fired: ${held.reason}${heldFor(held)} — a new outage (the shutdown of the last one is over): its guests move to the node that stays and the other nodes go down`
          : `first threshold of cluster ${stage.name} fired: ${held.reason}${heldFor(held)}: its guests move to the node that stays and the other nodes go down`,
      { clusterId: stage.clusterId, trigger: held.trigger, ...snapshot(reading) },
    );
  }
  const held = Object.entries(stages);
  if (held.length > 0 && stableMains) {
    for (const [clusterId, stage] of held) {
      const name = input.stages?.find((s) => s.clusterId === clusterId)?.name ?? clusterId;
      event(
        "info",
        "consolidate.released",
        `first-stage latch of cluster ${name} released after ${span(mainsMs! / 1000)} of stable mains (it fired ${stage.at.toISOString()}: ${stage.reason})`,
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
      durations: { onBatteryMs, mainsMs, alarmMs: null },
      pending,
    },
    events,
    fired,
  };
}

function decideUnreliable(
  input: DecisionInput,
  reading: Extract<UpsReading, { kind: "unreliable" }>,
): Outcome {
  const { previous, now, triggers, ups, elapsedMs } = input;
  const events: PowerEventDraft[] = [];
  const lastSeenOnBattery = previous.lastReading?.onBattery === true;
  const alarm = previous.alarm ?? { since: now, reason: reading.reason };
  // Counted from the first failed read the console saw, never from the last contact: a worker
  // that was down for a while must not count its own absence as lost contact.
  const alarmMs = previous.alarm ? (previous.durations.alarmMs ?? 0) + elapsedMs : 0;
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
  if (latch === null && lastSeenOnBattery && after !== null && alarmMs >= after * 1000) {
    const reason = `no reliable reading for ${span(alarmMs / 1000)} (opt-in after ${span(after)}) while last seen on battery: ${reading.reason}`;
    latch = fired = { trigger: "unreachable_on_battery", at: now, reason, reading: null };
    events.push({
      at: now,
      severity: "critical",
      kind: "trigger.fired",
      message: `${ups.name}: trigger fired: ${reason}`,
      data: { trigger: "unreachable_on_battery", reason: reading.reason },
    });
  }
  // The battery goes on draining while the UPS cannot be asked: last seen on battery, the time
  // counts. Stable mains is only what a reliable reading says: that time does not count.
  const { onBatteryMs } = previous.durations;
  return {
    state: {
      ...previous,
      reachable: false,
      latch,
      alarm,
      durations: {
        ...previous.durations,
        onBatteryMs:
          onBatteryMs !== null && lastSeenOnBattery ? onBatteryMs + elapsedMs : onBatteryMs,
        alarmMs,
      },
    },
    events,
    fired,
  };
}

type Firing = { trigger: TriggerKind; reason: string };

/** A firing row carried one reading further: held longer, or begun now. */
function hold(
  previous: PendingTrigger | undefined,
  firing: Firing | null,
  elapsedMs: number,
  now: Date,
): PendingTrigger | null {
  if (!firing) return null;
  const lowBattery = firing.trigger === "low_battery";
  if (!previous) {
    return { ...firing, since: now, heldMs: 0, readings: 1, lowBatteryInARow: lowBattery ? 1 : 0 };
  }
  return {
    ...firing,
    since: previous.since,
    heldMs: previous.heldMs + elapsedMs,
    readings: previous.readings + 1,
    lowBatteryInARow: lowBattery ? previous.lowBatteryInARow + 1 : 0,
  };
}

/** Held for the confirmation: `confirmSeconds`, or the UPS's own low battery twice in a row. */
function confirmed(held: PendingTrigger, triggers: TriggerSettings): boolean {
  return held.heldMs >= triggers.confirmSeconds * 1000 || held.lowBatteryInARow >= 2;
}

function heldFor(held: PendingTrigger): string {
  return held.readings > 1
    ? ` (held ${span(held.heldMs / 1000)} over ${held.readings} readings)`
    : "";
}

/** The first row of the table that fires, in the spec's order. */
function firstFiring(
  reading: UpsValues,
  onBatteryMs: number,
  triggers: Pick<TriggerSettings, "lowBattery" | keyof Thresholds>,
): Firing | null {
  if (triggers.lowBattery && reading.lowBattery) {
    return {
      trigger: "low_battery",
      reason: `the UPS reports low battery (${reading.rawStatus})`,
    };
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
  if (onBatteryFor !== null && onBatteryMs >= onBatteryFor * 1000) {
    return {
      trigger: "on_battery_for",
      reason: `on battery for ${span(onBatteryMs / 1000)} by the console's clock (limit ${span(onBatteryFor)})`,
    };
  }
  return null;
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
