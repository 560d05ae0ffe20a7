/**
 * Whether a shutdown run asks its UPS to cycle its output (docs/power.md, "UPS output cycle"):
 * one decision table, its rows in the order they are checked, each row's comment its condition.
 * The first row that holds decides. Rows up to "dry-run" need nothing from the network; the
 * rest are only asked (and only filled in) when the run is armed and would send.
 */

export type OutputCycleFacts = {
  /** The UPS's `outputCycle` setting (off by default). */
  enabled: boolean;
  upsName: string;
  /** The target that runs the console, when this UPS feeds it. */
  consoleHost: string | null;
  source: { type: "nut"; hasCredentials: boolean } | { type: "snmp"; version: "1" | "2c" | "3" };
  /** Targets fed by this UPS that this run did not shut down (disabled, not due, or unreachable). */
  notInRun: readonly string[];
  drill: boolean;
  /** The run's plan was made armed and the console still is. */
  armed: boolean;
  /** Armed only: targets fed by this UPS the run did not see go down. */
  notSeenDown?: readonly string[];
  /** Armed only: targets whose API answered the probe just now (or could not be probed). */
  stillAnswering?: readonly string[];
  /** Armed only: a fresh reading of the UPS. */
  reading?: { kind: "reading"; onBattery: boolean } | { kind: "unreliable"; reason: string };
};

export type OutputCycleDecision =
  | { kind: "off" }
  | { kind: "refuse"; reason: string }
  | { kind: "would"; why: string }
  /** Facts of the armed rows are missing: ask the network, then decide again. */
  | { kind: "check" }
  | { kind: "send" };

export function decideOutputCycle(facts: OutputCycleFacts): OutputCycleDecision {
  const ups = facts.upsName;
  // Off (the default): nothing is asked of the UPS, nothing recorded but a log line.
  if (!facts.enabled) return { kind: "off" };
  // The console's own host is fed by this UPS: it goes down last, so the console cannot read
  // back that it is down — and a command sent while it still runs would cut it hard.
  if (facts.consoleHost !== null) {
    return {
      kind: "refuse",
      reason: `the console's own host ${facts.consoleHost} is fed by ${ups}: it goes down last, so the console cannot see it down before the command would have to go out; cycle the output from the UPS's own upsmon (its primary) instead`,
    };
  }
  // SNMP: the console holds read access only (the UPS-MIB SETs of RFC 1628 need a write
  // community or a v3 user with write access, which the console neither asks for nor stores).
  if (facts.source.type === "snmp") {
    return {
      kind: "refuse",
      reason: `not possible with this source: ${ups} is read over SNMP ${facts.source.version === "3" ? "v3" : `v${facts.source.version}`} with read access only; the UPS-MIB's upsShutdownAfterDelay and upsAutoRestart need write access the console does not hold. Read this UPS over NUT to use the output cycle`,
    };
  }
  // NUT without a user: upsd takes INSTCMD only from a user of upsd.users.
  if (!facts.source.hasCredentials) {
    return {
      kind: "refuse",
      reason: `${ups} is read from upsd without a user; INSTCMD needs a user with "instcmds = shutdown.return" in upsd.users`,
    };
  }
  // A host on this UPS that this run did not shut down may still run: cutting its power is what
  // the whole shutdown exists to avoid.
  if (facts.notInRun.length > 0) {
    return {
      kind: "refuse",
      reason: `${facts.notInRun.join(", ")} ${facts.notInRun.length === 1 ? "is" : "are"} fed by ${ups} but not shut down by this run`,
    };
  }
  // A drill rehearses; it never switches a UPS's output, live or not.
  if (facts.drill) return { kind: "would", why: "a drill never sends it" };
  // Dry-run (or disarmed since the plan was made): recorded, nothing sent.
  if (!facts.armed) return { kind: "would", why: "dry-run: nothing sent" };
  if (facts.notSeenDown === undefined || facts.stillAnswering === undefined || !facts.reading) {
    return { kind: "check" };
  }
  // Only with a read-back that every target is down.
  if (facts.notSeenDown.length > 0) {
    return {
      kind: "refuse",
      reason: `${facts.notSeenDown.join(", ")} ${facts.notSeenDown.length === 1 ? "was" : "were"} not seen down by this run`,
    };
  }
  // Never while any target still answers ("could not ask" is not "down").
  if (facts.stillAnswering.length > 0) {
    return {
      kind: "refuse",
      reason: `${facts.stillAnswering.join(", ")} still ${facts.stillAnswering.length === 1 ? "answers" : "answer"} (probed just now)`,
    };
  }
  // The UPS must be on battery right now: no reliable reading is no permission.
  if (facts.reading.kind === "unreliable") {
    return {
      kind: "refuse",
      reason: `no reliable reading of ${ups} just now: ${facts.reading.reason}`,
    };
  }
  // Mains is back: the fleet comes back by the way back, not by a cut.
  if (!facts.reading.onBattery) {
    return {
      kind: "refuse",
      reason: `${ups} is on mains again (read just now): the output stays on; the way back brings the hosts up`,
    };
  }
  return { kind: "send" };
}
