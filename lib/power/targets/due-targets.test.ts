import { describe, expect, it } from "vitest";
import { dueTargets, mainsBackFor, type FedTarget } from "./due-targets";

const t1 = new Date("2026-12-01T10:00:00Z");
const t2 = new Date("2026-12-01T10:05:00Z");

const target = (
  id: string,
  feedPolicy: FedTarget["feedPolicy"],
  feeds: string[],
  enabled = true,
) => ({
  id,
  feedPolicy,
  feeds,
  enabled,
});

describe("feed policies", () => {
  it("any: one latched feed makes the target due, since the earliest latch", () => {
    const due = dueTargets(
      [target("h", "any", ["a", "b"])],
      new Map([
        ["b", t2],
        ["a", t1],
      ]),
    );
    expect(due).toEqual([{ targetId: "h", dueSince: t1 }]);
    expect(dueTargets([target("h", "any", ["a", "b"])], new Map([["b", t2]]))).toEqual([
      { targetId: "h", dueSince: t2 },
    ]);
  });

  it("all: a host with redundant supplies stays up while one feed is not latched", () => {
    const redundant = target("h", "all", ["a", "b"]);
    expect(dueTargets([redundant], new Map([["a", t1]]))).toEqual([]);
    expect(
      dueTargets(
        [redundant],
        new Map([
          ["a", t1],
          ["b", t2],
        ]),
      ),
    ).toEqual([{ targetId: "h", dueSince: t2 }]);
  });

  it("a target without feeds, or turned off, is never due", () => {
    const latched = new Map([["a", t1]]);
    expect(dueTargets([target("h", "any", []), target("g", "all", [])], latched)).toEqual([]);
    expect(dueTargets([target("h", "any", ["a"], false)], latched)).toEqual([]);
  });

  it("mains is back for a target only on reliable 'on mains' readings of the feeds its policy needs", () => {
    const any = target("h", "any", ["a", "b"]);
    const all = target("g", "all", ["a", "b"]);
    const onMains = (entries: [string, boolean][]) => new Map(entries);
    expect(
      mainsBackFor(
        any,
        onMains([
          ["a", true],
          ["b", true],
        ]),
      ),
    ).toBe(true);
    expect(
      mainsBackFor(
        any,
        onMains([
          ["a", true],
          ["b", false],
        ]),
      ),
    ).toBe(false);
    // b unknown (no reliable reading): not back.
    expect(mainsBackFor(any, onMains([["a", true]]))).toBe(false);
    expect(mainsBackFor(all, onMains([["a", true]]))).toBe(true);
    expect(mainsBackFor(all, onMains([["a", false]]))).toBe(false);
  });
});

describe("a feed the console cannot ask", () => {
  it("all: counts as failing beside a latched feed — a redundant host is not kept up by a UPS nobody can read", () => {
    const redundant = target("h", "all", ["a", "b"]);
    expect(dueTargets([redundant], new Map([["a", t1]]), new Set(["b"]))).toEqual([
      { targetId: "h", dueSince: t1 },
    ]);
  });

  it("makes nothing due on its own: at least one feed must have latched", () => {
    expect(dueTargets([target("h", "all", ["a", "b"])], new Map(), new Set(["a", "b"]))).toEqual(
      [],
    );
    expect(dueTargets([target("h", "any", ["a"])], new Map(), new Set(["a"]))).toEqual([]);
  });
});
