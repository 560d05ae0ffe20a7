import { describe, expect, it } from "vitest";
import { decideOutputCycle, type OutputCycleFacts } from "./output-cycle-decision";

/** Everything in favour of sending: each test turns one fact against it. */
const ready: OutputCycleFacts = {
  enabled: true,
  upsName: "ups1",
  consoleHost: null,
  source: { type: "nut", hasCredentials: true },
  notInRun: [],
  drill: false,
  armed: true,
  notSeenDown: [],
  stillAnswering: [],
  reading: { kind: "reading", onBattery: true },
};

const decide = (over: Partial<OutputCycleFacts>) => decideOutputCycle({ ...ready, ...over });

describe("whether a shutdown run asks its UPS to cycle its output", () => {
  it("sends only when armed, every target fed by the UPS seen down and silent, and the UPS still on battery", () => {
    expect(decide({})).toEqual({ kind: "send" });
  });

  it("does nothing while the setting is off (the default), whatever else holds", () => {
    expect(decide({ enabled: false })).toEqual({ kind: "off" });
    expect(decide({ enabled: false, consoleHost: "pve1", armed: false })).toEqual({ kind: "off" });
  });

  it("refuses when the console's own host is fed by the UPS: it cannot see itself down", () => {
    const decision = decide({ consoleHost: "pve3" });
    expect(decision).toMatchObject({ kind: "refuse" });
    expect(decision.kind === "refuse" && decision.reason).toContain(
      "the console's own host pve3 is fed by ups1",
    );
  });

  it("says an SNMP source cannot do it: the console holds read access only", () => {
    const decision = decide({ source: { type: "snmp", version: "2c" } });
    expect(decision.kind === "refuse" && decision.reason).toMatch(
      /^not possible with this source: ups1 is read over SNMP v2c with read access only/,
    );
  });

  it("refuses a NUT source without a user: upsd takes INSTCMD only from a user", () => {
    const decision = decide({ source: { type: "nut", hasCredentials: false } });
    expect(decision.kind === "refuse" && decision.reason).toContain('"instcmds = shutdown.return"');
  });

  it("refuses while a host on the UPS was not shut down by this run, in dry-run too", () => {
    for (const armed of [true, false]) {
      expect(decide({ armed, notInRun: ["pve9"] })).toEqual({
        kind: "refuse",
        reason: "pve9 is fed by ups1 but not shut down by this run",
      });
    }
  });

  it("only records what it would do in a drill (live or not) and in dry-run", () => {
    expect(decide({ drill: true })).toEqual({ kind: "would", why: "a drill never sends it" });
    expect(decide({ armed: false })).toEqual({ kind: "would", why: "dry-run: nothing sent" });
  });

  it("asks the network first when armed and the read-backs are not in yet", () => {
    expect(
      decide({ notSeenDown: undefined, stillAnswering: undefined, reading: undefined }),
    ).toEqual({ kind: "check" });
  });

  it("never sends while a target was not seen down or still answers ('could not ask' is not 'down')", () => {
    expect(decide({ notSeenDown: ["pve2"] })).toEqual({
      kind: "refuse",
      reason: "pve2 was not seen down by this run",
    });
    expect(decide({ stillAnswering: ["pve2", "pbs1 (cannot be asked: no token)"] })).toEqual({
      kind: "refuse",
      reason: "pve2, pbs1 (cannot be asked: no token) still answer (probed just now)",
    });
  });

  it("never sends without a fresh reading on battery", () => {
    expect(decide({ reading: { kind: "unreliable", reason: "ERR DATA-STALE" } })).toEqual({
      kind: "refuse",
      reason: "no reliable reading of ups1 just now: ERR DATA-STALE",
    });
    const onMains = decide({ reading: { kind: "reading", onBattery: false } });
    expect(onMains.kind === "refuse" && onMains.reason).toMatch(/^ups1 is on mains again/);
  });
});
