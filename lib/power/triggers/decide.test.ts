import { describe, expect, it } from "vitest";
import { ZTriggerSettings, type TriggerSettings } from "@/lib/power/config/settings";
import type { UpsReading } from "@/lib/power/ups/reading";
import { decide, type Decision, type StageThreshold } from "./decide";
import { UNKNOWN_STATE, type UpsMonitorState } from "./state";

const T0 = new Date("2026-12-01T10:00:00Z");
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
// The rows of the table, each on its own: no confirmation (its own tests below use the default).
const defaults = ZTriggerSettings.parse({ confirmSeconds: 0 });

function reading(seconds: number, values: Partial<Extract<UpsReading, { kind: "reading" }>> = {}) {
  return {
    kind: "reading",
    at: at(seconds),
    onBattery: false,
    lowBattery: false,
    chargePercent: 100,
    runtimeSeconds: 3600,
    reportedSecondsOnBattery: null,
    rawStatus: "OL",
    ...values,
  } satisfies UpsReading;
}
const onBattery = (
  seconds: number,
  values: Partial<Extract<UpsReading, { kind: "reading" }>> = {},
) => reading(seconds, { onBattery: true, rawStatus: "OB DISCHRG", ...values });
const unreliable = (seconds: number): UpsReading => ({
  kind: "unreliable",
  at: at(seconds),
  reason: "upsd at 127.0.0.1:3493 answered ERR DATA-STALE",
});

/**
 * Feeds readings through decide, one after another, as the monitor does. The monotonic time
 * between two readings is the difference of their `at` unless `elapsedMs` says otherwise (a
 * wall clock that steps while the monotonic one runs on).
 */
function feed(
  readings: UpsReading[],
  options: {
    triggers?: Partial<TriggerSettings>;
    from?: UpsMonitorState;
    stages?: StageThreshold[];
    elapsedMs?: number[];
    outageShutdownOver?: boolean;
  } = {},
): Decision[] {
  const triggers = { ...defaults, ...options.triggers };
  let previous = options.from ?? UNKNOWN_STATE;
  // A state read back (a restart): the gap since its last reading, as the monitor counts it.
  let before: Date | null = options.from?.lastReading?.at ?? null;
  return readings.map((r, i) => {
    const decision = decide({
      ups: { name: "ups-a" },
      previous,
      reading: r,
      triggers,
      ...(options.stages ? { stages: options.stages } : {}),
      now: r.at,
      elapsedMs: options.elapsedMs?.[i] ?? (before ? r.at.getTime() - before.getTime() : 0),
      ...(options.outageShutdownOver ? { outageShutdownOver: true } : {}),
    });
    before = r.at;
    previous = decision.state;
    return decision;
  });
}
const kinds = (decisions: Decision[]) => decisions.flatMap((d) => d.events.map((e) => e.kind));
const last = (decisions: Decision[]) => decisions[decisions.length - 1]!;

describe("the trigger decision", () => {
  it("never triggers on mains, even with low battery, low charge and little runtime", () => {
    const decisions = feed([
      reading(0),
      reading(1, { lowBattery: true, chargePercent: 5, runtimeSeconds: 20, rawStatus: "OL LB" }),
    ]);
    expect(decisions.map((d) => d.fired)).toEqual([null, null]);
    expect(last(decisions).state.latch).toBeNull();
    expect(last(decisions).demandsShutdown).toBe(false);
  });

  it("starts the console's on-battery clock at the mains→battery transition and says so", () => {
    const decisions = feed([reading(0), onBattery(7)]);
    expect(last(decisions).state.onBatterySince).toEqual(at(7));
    expect(last(decisions).state.mainsSince).toBeNull();
    expect(kinds(decisions)).toEqual(["ups.on_battery"]);
    expect(last(decisions).events[0]!.severity).toBe("warning");
    expect(last(decisions).fired).toBeNull();
  });

  it("fires on the UPS's low battery while on battery, latches, and demands shutdown", () => {
    const decisions = feed([
      reading(0),
      onBattery(1),
      onBattery(2, { lowBattery: true, rawStatus: "OB LB" }),
    ]);
    const fired = last(decisions).fired!;
    expect(fired.trigger).toBe("low_battery");
    expect(fired.at).toEqual(at(2));
    expect(last(decisions).state.latch).toEqual(fired);
    expect(last(decisions).demandsShutdown).toBe(true);
    expect(kinds(decisions)).toEqual(["ups.on_battery", "ups.low_battery", "trigger.fired"]);
  });

  it("fires straight from on line to OB LB in one reading (the UPS that dies without warning)", () => {
    const decisions = feed([reading(0), onBattery(1, { lowBattery: true, rawStatus: "OB LB" })]);
    expect(last(decisions).fired?.trigger).toBe("low_battery");
  });

  it("ignores the UPS's low battery when that trigger is turned off", () => {
    const decisions = feed([reading(0), onBattery(1, { lowBattery: true })], {
      triggers: { lowBattery: false },
    });
    expect(last(decisions).fired).toBeNull();
  });

  it("fires when the runtime falls below the threshold", () => {
    const decisions = feed([
      reading(0),
      onBattery(1, { runtimeSeconds: 300 }),
      onBattery(2, { runtimeSeconds: 299 }),
    ]);
    expect(decisions.map((d) => d.fired?.trigger ?? null)).toEqual([null, null, "runtime"]);
    expect(last(decisions).fired!.reason).toMatch(/runtime 4 min 59 s is below 5 min 0 s/);
  });

  it("fires when the charge falls below the threshold", () => {
    const decisions = feed([
      reading(0),
      onBattery(1, { chargePercent: 30 }),
      onBattery(2, { chargePercent: 29.5 }),
    ]);
    expect(decisions.map((d) => d.fired?.trigger ?? null)).toEqual([null, null, "charge"]);
  });

  it("takes the first row that fires, in the spec's order", () => {
    const decisions = feed([
      reading(0),
      onBattery(700, { lowBattery: true, chargePercent: 1, runtimeSeconds: 1 }),
    ]);
    expect(last(decisions).fired?.trigger).toBe("low_battery");
    const withoutLb = feed([reading(0), onBattery(1, { chargePercent: 1, runtimeSeconds: 1 })]);
    expect(last(withoutLb).fired?.trigger).toBe("runtime");
  });

  it("fires on battery ≥ N s measured by the console's clock from the transition", () => {
    const decisions = feed([reading(0), onBattery(10), onBattery(609), onBattery(610)]);
    expect(decisions.map((d) => d.fired?.trigger ?? null)).toEqual([
      null,
      null,
      null,
      "on_battery_for",
    ]);
    expect(last(decisions).fired!.reason).toMatch(
      /on battery for 10 min 0 s by the console's clock/,
    );
  });

  it("PVE-UPS #25: a UPS whose own counter says 900 s at the start of a new outage does not fire", () => {
    const stale = { reportedSecondsOnBattery: 900 };
    const decisions = feed([
      reading(0),
      onBattery(1, stale),
      onBattery(2, { reportedSecondsOnBattery: 901 }),
    ]);
    expect(decisions.map((d) => d.fired)).toEqual([null, null, null]);
    expect(last(decisions).state.onBatterySince).toEqual(at(1));
    // It fires only when the console's own clock reaches the limit.
    const later = feed([onBattery(611, { reportedSecondsOnBattery: 1510 })], {
      from: last(decisions).state,
    });
    expect(last(later).fired?.trigger).toBe("on_battery_for");
  });

  it("counts from the first sight when the UPS is already on battery at the console's first reading", () => {
    const decisions = feed([onBattery(0, { reportedSecondsOnBattery: 5000 })]);
    expect(last(decisions).state.onBatterySince).toEqual(at(0));
    expect(last(decisions).events[0]!.message).toMatch(/on battery when the console first read it/);
    expect(last(decisions).fired).toBeNull();
  });

  it("keeps the clock and the latch across a restart: the state read back continues", () => {
    const before = feed([reading(0), onBattery(5)]);
    // A worker restart: the next reading comes with the state as persisted.
    const after = feed([onBattery(300), onBattery(605)], { from: last(before).state });
    expect(kinds(after)).toEqual(["trigger.fired"]);
    expect(last(after).fired?.trigger).toBe("on_battery_for");
    const afterLatch = feed([onBattery(606)], { from: last(after).state });
    expect(last(afterLatch).fired).toBeNull();
    expect(last(afterLatch).state.latch?.at).toEqual(at(605));
    expect(last(afterLatch).demandsShutdown).toBe(true);
  });

  it("fires once: a latched UPS does not fire again while the outage goes on", () => {
    const decisions = feed([
      reading(0),
      onBattery(1, { lowBattery: true }),
      onBattery(2, { lowBattery: true, chargePercent: 2 }),
    ]);
    expect(kinds(decisions).filter((k) => k === "trigger.fired")).toHaveLength(1);
  });

  it("reports mains back, keeps the latch dormant, and stops demanding shutdown while on mains", () => {
    const decisions = feed([reading(0), onBattery(1, { lowBattery: true }), reading(30)]);
    expect(last(decisions).events.map((e) => e.kind)).toEqual(["ups.mains_back"]);
    expect(last(decisions).events[0]!.message).toMatch(/mains back after 29\.0 s on battery/);
    expect(last(decisions).events[0]!.message).toMatch(/stays latched but demands nothing more/);
    expect(last(decisions).state.latch).toMatchObject({ trigger: "low_battery", dormant: true });
    expect(last(decisions).demandsShutdown).toBe(false);
    // Back on battery before the latch released: nothing fires, nothing is demanded.
    const again = feed([onBattery(60)], { from: last(decisions).state });
    expect(kinds(again)).toEqual(["ups.on_battery"]);
    expect(last(again).demandsShutdown).toBe(false);
    // A row that fires again wakes it: the same outage (its time), demanded again.
    const low = feed([onBattery(61, { lowBattery: true })], { from: last(again).state });
    expect(last(low).state.latch).toMatchObject({ at: at(1), dormant: false });
    expect(last(low).demandsShutdown).toBe(true);
    expect(last(low).events.find((e) => e.kind === "trigger.fired")!.message).toMatch(
      /trigger holds again on battery/,
    );
  });

  it("a dormant latch that fires again once the last outage's shutdown is over starts a new outage", () => {
    const asleep = last(feed([reading(0), onBattery(1, { lowBattery: true }), reading(30)])).state;
    const low = feed([onBattery(60), onBattery(61, { lowBattery: true })], {
      from: asleep,
      outageShutdownOver: true,
    });
    expect(last(low).state.latch).toMatchObject({ at: at(61) });
    expect(last(low).state.latch?.dormant).toBeFalsy();
    expect(last(low).fired).toMatchObject({ at: at(61) });
    expect(last(low).demandsShutdown).toBe(true);
    expect(last(low).events.find((e) => e.kind === "trigger.fired")!.message).toMatch(
      /a new outage \(the shutdown of the one latched .+ is over\): every target is due again/,
    );
  });

  it("releases the latch after N s of unbroken mains; a battery blip starts the count again", () => {
    const triggers = { latchReleaseAfterStableMainsSeconds: 300 };
    const latched = last(
      feed([reading(0), onBattery(1, { lowBattery: true })], { triggers }),
    ).state;
    const blip = feed(
      [reading(10), reading(200), onBattery(250), reading(260), reading(559), reading(560)],
      {
        triggers,
        from: latched,
      },
    );
    expect(blip.map((d) => d.state.latch === null)).toEqual([
      false,
      false,
      false,
      false,
      false,
      true,
    ]);
    expect(last(blip).events.map((e) => e.kind)).toEqual(["latch.released"]);
  });

  it("raises an alarm on an unreliable reading, once, and never triggers on it by default", () => {
    const decisions = feed([
      reading(0),
      onBattery(1),
      unreliable(2),
      unreliable(3),
      unreliable(5000),
    ]);
    expect(kinds(decisions)).toEqual(["ups.on_battery", "ups.unreachable"]);
    const alarm = decisions[2]!.events[0]!;
    expect(alarm.severity).toBe("critical");
    expect(alarm.message).toMatch(
      /no reliable reading: upsd .* ERR DATA-STALE \(last seen on battery\)/,
    );
    expect(decisions.map((d) => d.fired)).toEqual([null, null, null, null, null]);
    const state = last(decisions).state;
    expect(state.reachable).toBe(false);
    expect(state.alarm?.since).toEqual(at(2));
    // The clock is not lost while the UPS cannot be asked.
    expect(state.onBatterySince).toEqual(at(1));
  });

  it("an unreachable UPS last seen on mains raises a warning, not a critical alarm", () => {
    const decisions = feed([reading(0), unreliable(1)]);
    expect(last(decisions).events[0]!.severity).toBe("warning");
  });

  it("opt-in: fires after N s without a reliable reading while last seen on battery, counted from the first failed read", () => {
    const triggers = { unreachableShutdownAfterSeconds: 120 };
    const decisions = feed(
      [reading(0), onBattery(1), unreliable(100), unreliable(219), unreliable(220)],
      { triggers },
    );
    expect(decisions.map((d) => d.fired?.trigger ?? null)).toEqual([
      null,
      null,
      null,
      null,
      "unreachable_on_battery",
    ]);
    expect(last(decisions).demandsShutdown).toBe(true);
    const onMains = feed([reading(0), unreliable(1), unreliable(10_000)], { triggers });
    expect(last(onMains).fired).toBeNull();
  });

  it("says when the UPS answers again and clears the alarm", () => {
    const decisions = feed([reading(0), unreliable(1), reading(13)]);
    expect(last(decisions).events.map((e) => e.kind)).toEqual(["ups.reachable"]);
    expect(last(decisions).events[0]!.message).toMatch(/answering again after 12\.0 s/);
    expect(last(decisions).state.alarm).toBeNull();
    expect(last(decisions).state.reachable).toBe(true);
  });

  it("turns a threshold off with null", () => {
    const triggers = {
      runtimeBelowSeconds: null,
      chargeBelowPercent: null,
      onBatteryForSeconds: null,
    };
    const decisions = feed(
      [reading(0), onBattery(100_000, { chargePercent: 1, runtimeSeconds: 1 })],
      { triggers },
    );
    expect(last(decisions).fired).toBeNull();
  });
});

describe("a consolidating cluster's first threshold", () => {
  const stage: StageThreshold = {
    clusterId: "c1",
    name: "prod",
    firstThreshold: {
      runtimeBelowSeconds: 900,
      chargeBelowPercent: null,
      onBatteryForSeconds: null,
    },
  };

  it("latches before the trigger, demands the first stage (not the shutdown), and holds while the runtime recovers", () => {
    const decisions = feed(
      [
        reading(0),
        onBattery(1, { runtimeSeconds: 1200 }),
        onBattery(2, { runtimeSeconds: 850 }),
        onBattery(3, { runtimeSeconds: 1000 }),
      ],
      { stages: [stage] },
    );
    expect(decisions.map((d) => d.demandsFirstStage)).toEqual([false, false, true, true]);
    expect(decisions.map((d) => d.demandsShutdown)).toEqual([false, false, false, false]);
    expect(last(decisions).state.stages).toEqual({
      c1: { trigger: "runtime", at: at(2), reason: "runtime 14 min 10 s is below 15 min 0 s" },
    });
    expect(kinds(decisions)).toEqual(["ups.on_battery", "consolidate.fired"]);
    expect(decisions[2]!.events[0]!.message).toBe(
      "ups-a: first threshold of cluster prod fired: runtime 14 min 10 s is below 15 min 0 s: its guests move to the node that stays and the other nodes go down",
    );
    // Then the trigger: both demands hold.
    const final = feed([onBattery(4, { runtimeSeconds: 200 })], {
      stages: [stage],
      from: last(decisions).state,
    });
    expect(last(final)).toMatchObject({ demandsShutdown: true, demandsFirstStage: true });
  });

  it("never begins once the trigger fired: the final threshold came first", () => {
    const decisions = feed([reading(0), onBattery(1, { lowBattery: true, runtimeSeconds: 100 })], {
      stages: [stage],
    });
    expect(last(decisions).state.latch?.trigger).toBe("low_battery");
    expect(last(decisions).state.stages).toEqual({});
    expect(last(decisions).demandsFirstStage).toBe(false);
  });

  it("fires on its own rows only: the UPS's low battery is the trigger's", () => {
    const decisions = feed([reading(0), onBattery(1, { runtimeSeconds: 3000 })], {
      stages: [{ ...stage, firstThreshold: { ...stage.firstThreshold, onBatteryForSeconds: 60 } }],
      triggers: { lowBattery: false },
    });
    expect(last(decisions).state.stages).toEqual({});
    const later = feed([onBattery(61, { runtimeSeconds: 3000, lowBattery: true })], {
      stages: [{ ...stage, firstThreshold: { ...stage.firstThreshold, onBatteryForSeconds: 60 } }],
      triggers: { lowBattery: false },
      from: last(decisions).state,
    });
    expect(last(later).state.stages.c1?.trigger).toBe("on_battery_for");
  });

  it("is released with the trigger's rule: after stable mains for the release time, said", () => {
    const fired = feed([reading(0), onBattery(1, { runtimeSeconds: 800 })], { stages: [stage] });
    const back = feed([reading(10), reading(200), reading(311)], {
      stages: [stage],
      from: last(fired).state,
      triggers: { latchReleaseAfterStableMainsSeconds: 300 },
    });
    expect(back.map((d) => Object.keys(d.state.stages))).toEqual([["c1"], ["c1"], []]);
    expect(back.map((d) => d.demandsFirstStage)).toEqual([false, false, false]);
    expect(kinds(back)).toEqual(["ups.mains_back", "consolidate.released"]);
  });
});

describe("a blip is not an outage: a trigger holds before it fires", () => {
  const held = ZTriggerSettings.parse({});

  it("by default a row must go on firing for 3 s, reading after reading, before it latches", () => {
    const decisions = feed(
      [0, 1, 2, 3, 4].map((s) => onBattery(s, { runtimeSeconds: 200 })),
      { triggers: held },
    );
    expect(decisions.map((d) => d.fired?.trigger ?? null)).toEqual([
      null,
      null,
      null,
      "runtime",
      null,
    ]);
    expect(decisions[2]!.state.pending.trigger).toMatchObject({
      trigger: "runtime",
      heldMs: 2000,
      readings: 3,
    });
    expect(decisions[3]!.events.find((e) => e.kind === "trigger.fired")!.message).toMatch(
      /runtime 3 min 20 s is below 5 min 0 s \(held 3\.0 s over 4 readings\)/,
    );
    expect(decisions[3]!.state.pending).toEqual({});
  });

  it("a row that stops firing before the confirmation starts over, and nothing is demanded", () => {
    const decisions = feed(
      [
        onBattery(0, { runtimeSeconds: 200 }),
        onBattery(1, { runtimeSeconds: 200 }),
        onBattery(2, { runtimeSeconds: 900 }),
        onBattery(3, { runtimeSeconds: 200 }),
        onBattery(5, { runtimeSeconds: 200 }),
      ],
      { triggers: held },
    );
    expect(decisions.every((d) => d.fired === null && !d.demandsShutdown)).toBe(true);
    expect(last(decisions).state.pending.trigger).toMatchObject({ heldMs: 2000, readings: 2 });
  });

  it("the UPS's own low battery latches on its second reading in a row, not its first", () => {
    const decisions = feed(
      [reading(0), onBattery(1, { lowBattery: true }), onBattery(2, { lowBattery: true })],
      { triggers: held },
    );
    expect(decisions.map((d) => d.fired?.trigger ?? null)).toEqual([null, null, "low_battery"]);
    // A row that fired before it (runtime) does not count as a low-battery reading.
    const mixed = feed(
      [
        onBattery(0, { runtimeSeconds: 200 }),
        onBattery(1, { runtimeSeconds: 200, lowBattery: true }),
      ],
      { triggers: held },
    );
    expect(mixed.map((d) => d.fired)).toEqual([null, null]);
  });

  it("a reading without a reliable value neither confirms nor cancels what is pending", () => {
    const decisions = feed(
      [
        onBattery(0, { runtimeSeconds: 200 }),
        unreliable(1),
        unreliable(5),
        onBattery(6, { runtimeSeconds: 200 }),
      ],
      { triggers: held },
    );
    expect(decisions[2]!.state.pending.trigger).toMatchObject({ heldMs: 0, readings: 1 });
    // The reading after the gap adds its own interval only: held 1 s, not 6 s.
    expect(last(decisions).state.pending.trigger).toMatchObject({ heldMs: 1000, readings: 2 });
    expect(last(decisions).fired).toBeNull();
  });

  it("after mains came back (a cancelled run), a 1-s blip inside the latch's window demands nothing", () => {
    const outage = feed(
      [reading(0), onBattery(1, { lowBattery: true }), onBattery(2, { lowBattery: true })],
      { triggers: held },
    );
    expect(last(outage).demandsShutdown).toBe(true);
    const blip = feed(
      [
        reading(3),
        reading(60),
        onBattery(61, { lowBattery: true, runtimeSeconds: 100 }),
        reading(62),
        reading(63),
      ],
      { triggers: held, from: last(outage).state },
    );
    expect(blip.map((d) => d.demandsShutdown)).toEqual([false, false, false, false, false]);
    expect(last(blip).state.latch).toMatchObject({ at: at(2), dormant: true });
    expect(kinds(blip)).not.toContain("trigger.fired");
  });

  it("a consolidating cluster's first threshold holds the same way, and goes dormant on mains", () => {
    const stage: StageThreshold = {
      clusterId: "c1",
      name: "prod",
      firstThreshold: {
        runtimeBelowSeconds: 1200,
        chargeBelowPercent: null,
        onBatteryForSeconds: null,
      },
    };
    const decisions = feed(
      [0, 1, 2, 3].map((s) => onBattery(s, { runtimeSeconds: 1000 })),
      { triggers: held, stages: [stage] },
    );
    expect(decisions.map((d) => d.demandsFirstStage)).toEqual([false, false, false, true]);
    const back = feed([reading(4), onBattery(5, { runtimeSeconds: 1000 })], {
      triggers: held,
      stages: [stage],
      from: last(decisions).state,
    });
    expect(back.map((d) => d.demandsFirstStage)).toEqual([false, false]);
    expect(last(back).state.stages.c1).toMatchObject({ at: at(3), dormant: true });
  });
});

describe("time is monotonic: a wall-clock step neither fires nor delays a trigger", () => {
  const onBatteryFor = { onBatteryForSeconds: 600, runtimeSeconds: null, chargeBelowPercent: null };

  it("an NTP step forward of 10 min while on battery does not fire the time-on-battery trigger", () => {
    const decisions = feed(
      [reading(0), onBattery(1), onBattery(2), onBattery(603), onBattery(604)],
      { triggers: onBatteryFor, elapsedMs: [0, 1000, 1000, 1000, 1000] },
    );
    expect(decisions.map((d) => d.fired)).toEqual([null, null, null, null, null]);
    expect(last(decisions).state.durations.onBatteryMs).toBe(3000);
  });

  it("an NTP step back of 10 min does not delay it: it fires after 600 s of monotonic time", () => {
    const steps = Array.from({ length: 600 }, (_, i) => i + 2);
    const decisions = feed(
      [
        reading(0),
        onBattery(1),
        // The wall clock steps back by 10 min after the first second on battery.
        ...steps.map((s) => onBattery(s - 600)),
      ],
      { triggers: onBatteryFor, elapsedMs: [0, 1000, ...steps.map(() => 1000)] },
    );
    const firedAt = decisions.findIndex((d) => d.fired !== null);
    expect(decisions[firedAt]!.fired!.trigger).toBe("on_battery_for");
    expect(decisions[firedAt]!.state.durations.onBatteryMs).toBe(600_000);
    expect(firedAt).toBe(601);
  });

  it("a wall step forward on mains does not release the latch early", () => {
    const outage = feed([reading(0), onBattery(1, { lowBattery: true }), reading(2)]);
    const after = feed([reading(1000), reading(1001)], {
      from: last(outage).state,
      triggers: { latchReleaseAfterStableMainsSeconds: 300 },
      elapsedMs: [1000, 1000],
    });
    expect(kinds(after)).not.toContain("latch.released");
    expect(last(after).state.latch).not.toBeNull();
  });

  it("lost contact is counted by the monotonic clock too", () => {
    const decisions = feed([reading(0), onBattery(1), unreliable(2), unreliable(900)], {
      triggers: { unreachableShutdownAfterSeconds: 60 },
      elapsedMs: [0, 1000, 1000, 1000],
    });
    expect(decisions.map((d) => d.fired)).toEqual([null, null, null, null]);
    expect(last(decisions).state.durations.alarmMs).toBe(1000);
  });
});

describe("NUT's FSD", () => {
  const fsd = (seconds: number, values: Partial<Extract<UpsReading, { kind: "reading" }>> = {}) =>
    reading(seconds, { forcedShutdown: true, rawStatus: "FSD OL", ...values });
  const held = ZTriggerSettings.parse({});

  it("FSD with OL (upsmon -c fsd during NUT maintenance) fires nothing and demands nothing", () => {
    const decisions = feed([reading(0), fsd(1), fsd(2), fsd(10)], { triggers: held });
    expect(decisions.every((d) => d.fired === null && !d.demandsShutdown)).toBe(true);
    expect(kinds(decisions)).toEqual([]);
  });

  it("FSD together with on battery counts as low battery", () => {
    const decisions = feed(
      [
        reading(0),
        fsd(1, { onBattery: true, rawStatus: "FSD OB" }),
        fsd(2, { onBattery: true, rawStatus: "FSD OB" }),
      ],
      { triggers: held },
    );
    expect(last(decisions).fired?.trigger).toBe("low_battery");
    expect(last(decisions).demandsShutdown).toBe(true);
  });

  it("fires alone only when the admin turned that on knowingly", () => {
    const decisions = feed([reading(0), fsd(1), fsd(2)], {
      triggers: { ...held, forcedShutdownAlone: true },
    });
    expect(last(decisions).fired?.trigger).toBe("low_battery");
    const alone = feed(
      [
        reading(0),
        { kind: "unreliable", at: at(1), reason: "FSD WAIT", forcedShutdown: true },
        { kind: "unreliable", at: at(2), reason: "FSD WAIT", forcedShutdown: true },
      ],
      { triggers: { ...held, forcedShutdownAlone: true } },
    );
    expect(last(alone).demandsShutdown).toBe(true);
  });
});
