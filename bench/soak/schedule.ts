import type { Random } from "./prng";

/**
 * What the soak does and when, drawn from the seed before anything starts: the same seed gives
 * the same schedule on every machine, so a failure can be replayed. What happens at runtime can
 * still differ (which run is running when an abort comes), but every choice is made with the
 * event's own `pick`, over candidates in a fixed order.
 */

/** Every fault the chaos driver injects (bench/soak/faults.ts carries each out). */
export const FAULTS = [
  "worker.kill9",
  "web.kill9",
  "postgres.crash",
  "postgres.fastRestart",
  "postgres.pauseThenRestart",
  "ssh.dropMidCommand",
  "ssh.dropMidUpload",
  "api.vmList502",
  "api.config500",
  "api.vmListHang",
  "api.slowAnswers",
  "node.reboot",
  "node.unreachable",
  "build.killDriver",
  "build.killChild",
] as const;
export type Fault = (typeof FAULTS)[number];

/**
 * Faults of the lab UPS the console watches (bench/soak/power-faults.ts carries each out): its
 * NUT face refusing, silent or answering DATA-STALE for a while; mains failing and coming back
 * several times in a few seconds; an outage whose UPS counter of seconds on battery starts at a
 * stale value (PVE-UPS #25). None of them may start a shutdown. They come from a stream of their
 * own, so a seed's onboarding chaos is the same as before power existed.
 */
export const POWER_FAULTS = ["ups.unreachable", "ups.mainsFlapping", "ups.staleCounter"] as const;
export type PowerFault = (typeof POWER_FAULTS)[number];

/** Every action of the load (bench/soak/load.ts carries each out through the JSON API). */
export const LOAD_ACTIONS = [
  "reonboard",
  "abort",
  "retry",
  "decommission",
  "readd",
  "publishTemplate",
  "rotateConsoleKey",
] as const;
export type LoadAction = (typeof LOAD_ACTIONS)[number];

/**
 * Power load (bench/soak/power-load.ts), each in dry-run and armed (arming through the API as an
 * admin): an outage (on battery, then low battery: the trigger fires and the shutdown runs to its
 * end), mains back before the trigger, and mains back right after it latched.
 */
export const POWER_LOAD_ACTIONS = [
  "outage.dryRun",
  "outage.armed",
  "mainsBackBeforeTrigger.dryRun",
  "mainsBackBeforeTrigger.armed",
  "mainsBackAfterTrigger.dryRun",
  "mainsBackAfterTrigger.armed",
] as const;
export type PowerLoadAction = (typeof POWER_LOAD_ACTIONS)[number];

/** Faults that switch something on for a while on one node, and off again. */
const WINDOWED: ReadonlySet<Fault> = new Set([
  "ssh.dropMidCommand",
  "api.vmList502",
  "api.config500",
  "api.vmListHang",
  "api.slowAnswers",
  "node.unreachable",
]);

export type ChaosEvent = {
  atMs: number;
  fault: Fault;
  /** The lab node a node fault hits (index into the fleet). */
  node: number;
  /** How long a windowed fault stays on, or a Postgres pause lasts; 0 otherwise. */
  durationMs: number;
  /** The fault's own size: dropAfterMs for SSH drops, delayMs for slow answers. */
  amount: number;
  /** For choices made at runtime (which worker, which build). */
  pick: number;
};

export type LoadEvent = { atMs: number; action: LoadAction; pick: number };

export type PowerFaultEvent = {
  atMs: number;
  fault: PowerFault;
  /** How long (3–8 s) the UPS stays unreachable, the flapping lasts, or the stale outage lasts. */
  durationMs: number;
  /** For choices made at runtime (how unreachable, how stale). */
  pick: number;
};

export type PowerLoadEvent = { atMs: number; action: PowerLoadAction; pick: number };

export type Schedule = {
  chaos: ChaosEvent[];
  load: LoadEvent[];
  powerFaults: PowerFaultEvent[];
  powerLoad: PowerLoadEvent[];
};

export type ScheduleOptions = {
  /** The whole soak, from the first load action to the verdict. */
  durationMs: number;
  nodes: number;
};

/**
 * The end of every soak is quiet: no fault for this long before the verdict, so a run stuck for
 * more than a minute after the last fault (the invariant) can be told from one still recovering.
 */
export const QUIET_MS = 75_000;
/** The load stops starting work this long before the verdict. */
export const LOAD_STOPS_BEFORE_END_MS = 30_000;
/** The shortest soak: some chaos before the quiet end. */
export const MIN_DURATION_MS = QUIET_MS + 45_000;

/**
 * Gaps between two faults, in seconds: the first round of the deck comes fast (a two-minute soak
 * sees nearly every kind), later rounds leave the console time to work between faults.
 */
export const FIRST_ROUND_GAP_S = [1.5, 4] as const;
export const CHAOS_GAP_S = [5, 15] as const;
/** Gaps between two load actions, in seconds. */
export const LOAD_GAP_S = [5, 12] as const;

/**
 * Faults come from a deck: every kind once per round, in a shuffled order, so even a two-minute
 * soak sees most of them and a long one sees each about equally often.
 */
export function chaosSchedule(random: Random, options: ScheduleOptions): ChaosEvent[] {
  const events: ChaosEvent[] = [];
  let deck: Fault[] = [];
  const end = options.durationMs - QUIET_MS;
  let rounds = 0;
  for (let at = random.between(...FIRST_ROUND_GAP_S) * 1000; at < end;) {
    if (deck.length === 0) {
      deck = random.shuffle(FAULTS);
      rounds += 1;
    }
    const fault = deck.shift()!;
    const node = random.int(0, options.nodes - 1);
    const durationMs = WINDOWED.has(fault)
      ? Math.round(random.between(5, 20) * 1000)
      : fault === "postgres.pauseThenRestart"
        ? Math.round(random.between(3, 15) * 1000)
        : 0;
    const amount =
      fault === "ssh.dropMidCommand"
        ? random.pick([10, 50, 200, 1000, 3000])
        : fault === "api.slowAnswers"
          ? Math.round(random.between(2, 12) * 1000)
          : 0;
    events.push({ atMs: Math.round(at), fault, node, durationMs, amount, pick: random.next() });
    const [min, max] = rounds === 1 ? FIRST_ROUND_GAP_S : CHAOS_GAP_S;
    at += random.between(min, max) * 1000;
  }
  return events;
}

/** Load actions from a deck as well; retries twice as often (chaos makes many runs fail). */
export function loadSchedule(random: Random, options: ScheduleOptions): LoadEvent[] {
  const events: LoadEvent[] = [];
  let deck: LoadAction[] = [];
  const end = options.durationMs - LOAD_STOPS_BEFORE_END_MS;
  for (let at = random.between(...LOAD_GAP_S) * 1000; at < end;) {
    if (deck.length === 0) deck = random.shuffle([...LOAD_ACTIONS, "retry", "reonboard"]);
    events.push({ atMs: Math.round(at), action: deck.shift()!, pick: random.next() });
    at += random.between(...LOAD_GAP_S) * 1000;
  }
  return events;
}

/**
 * Gaps between two power faults and between two power load actions, in seconds. Power faults
 * wait for their turn with the outages, so they come early and often.
 */
export const POWER_FAULT_GAP_S = [3, 10] as const;
export const POWER_LOAD_GAP_S = [6, 15] as const;

/** Power faults from a deck, inside the chaos window like every fault. */
export function powerFaultSchedule(random: Random, options: ScheduleOptions): PowerFaultEvent[] {
  const events: PowerFaultEvent[] = [];
  let deck: PowerFault[] = [];
  const end = options.durationMs - QUIET_MS;
  for (let at = random.between(...FIRST_ROUND_GAP_S) * 1000; at < end;) {
    if (deck.length === 0) deck = random.shuffle(POWER_FAULTS);
    const fault = deck.shift()!;
    const durationMs = Math.round(random.between(3, 8) * 1000);
    events.push({ atMs: Math.round(at), fault, durationMs, pick: random.next() });
    at += random.between(...POWER_FAULT_GAP_S) * 1000;
  }
  return events;
}

/**
 * Power load from a deck whose first round is the two outages (dry-run and armed, in either
 * order), so even a two-minute soak sends one real shutdown; later rounds hold every action.
 */
export function powerLoadSchedule(random: Random, options: ScheduleOptions): PowerLoadEvent[] {
  const events: PowerLoadEvent[] = [];
  let deck: PowerLoadAction[] = random.shuffle(["outage.dryRun", "outage.armed"] as const);
  const end = options.durationMs - LOAD_STOPS_BEFORE_END_MS;
  for (let at = random.between(...POWER_LOAD_GAP_S) * 1000; at < end;) {
    if (deck.length === 0) deck = random.shuffle(POWER_LOAD_ACTIONS);
    events.push({ atMs: Math.round(at), action: deck.shift()!, pick: random.next() });
    at += random.between(...POWER_LOAD_GAP_S) * 1000;
  }
  return events;
}

/**
 * Every schedule from one seed, each from its own stream (the power streams come after the
 * first two, which stay what they were before power existed).
 */
export function soakSchedule(random: Random, options: ScheduleOptions): Schedule {
  const chaosRandom = random.fork();
  const loadRandom = random.fork();
  const powerFaultRandom = random.fork();
  const powerLoadRandom = random.fork();
  return {
    chaos: chaosSchedule(chaosRandom, options),
    load: loadSchedule(loadRandom, options),
    powerFaults: powerFaultSchedule(powerFaultRandom, options),
    powerLoad: powerLoadSchedule(powerLoadRandom, options),
  };
}

/** The element of `items` (in their given order) an event's `pick` chooses. */
export function choose<T>(items: readonly T[], pick: number): T | undefined {
  if (items.length === 0) return undefined;
  return items[Math.min(items.length - 1, Math.floor(pick * items.length))];
}
