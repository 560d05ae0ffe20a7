import { describe, expect, it } from "vitest";
import { doneWithOutage, type OutageTarget } from "./outage-done";

const down = (name: string): OutageTarget => ({ name, seenDown: true, ended: false });
const pastDeadline = (name: string): OutageTarget => ({ name, seenDown: false, ended: true });
const going = (name: string): OutageTarget => ({ name, seenDown: false, ended: false });

describe("whether the console is done with a UPS's outage (it then logs out of upsd)", () => {
  it.each([
    ["armed, every target seen down", "armed", [down("pve-a"), down("pve-b")], true],
    [
      "armed, one down, one past its deadline",
      "armed",
      [down("pve-a"), pastDeadline("pve-b")],
      true,
    ],
    [
      "armed, seen down after its run ended",
      "armed",
      [{ name: "pve-a", seenDown: true, ended: true }],
      true,
    ],
    ["armed, one still going down", "armed", [down("pve-a"), going("pve-b")], false],
    ["armed, nothing done yet", "armed", [going("pve-a")], false],
    ["armed, no target on this UPS: nothing to wait for", "armed", [], true],
    ["dry-run, every target seen down: nothing was shut down", "dry-run", [down("pve-a")], false],
    ["dry-run, no target", "dry-run", [], false],
  ] as const)("%s → %s", (_what, mode, targets, done) => {
    expect(doneWithOutage(mode, targets)).toBe(done);
  });
});
