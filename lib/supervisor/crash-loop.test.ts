import { describe, expect, it } from "vitest";
import { crashLoopOf, type Restart } from "./crash-loop";

const rule = { restarts: 3, windowMs: 60_000 };
const t0 = Date.parse("2026-12-01T10:00:00Z");
const at = (ms: number, ending = "exit code 1"): Restart => ({
  endedAt: new Date(t0 + ms),
  ending,
});

describe("crashLoopOf", () => {
  it("is no crash loop below the number of restarts the rule names", () => {
    expect(crashLoopOf([at(0), at(10_000)], new Date(t0 + 20_000), rule)).toBeNull();
  });

  it("is a crash loop once that many restarts fall within the window, with the last ending", () => {
    const loop = crashLoopOf(
      [at(0), at(10_000), at(20_000, "killed by SIGKILL")],
      new Date(t0 + 25_000),
      rule,
    );
    expect(loop).toEqual({
      restarts: 3,
      lastEnding: "killed by SIGKILL",
      lastEndedAt: new Date(t0 + 20_000),
      calmsAt: new Date(t0 + 60_000),
    });
  });

  it("does not count restarts older than the window", () => {
    expect(crashLoopOf([at(0), at(30_000), at(61_000)], new Date(t0 + 61_000), rule)).toBeNull();
  });

  it("is over exactly when the restart that made it one leaves the window", () => {
    const restarts = [at(0), at(5_000), at(10_000), at(40_000)];
    const loop = crashLoopOf(restarts, new Date(t0 + 45_000), rule);
    // 4 restarts: over once 2 remain, i.e. when the second one (5 s) is a window old.
    expect(loop?.calmsAt).toEqual(new Date(t0 + 65_000));
    expect(crashLoopOf(restarts, new Date(t0 + 64_999), rule)?.restarts).toBe(3);
    expect(crashLoopOf(restarts, new Date(t0 + 65_000), rule)).toBeNull();
  });

  it("reads restarts in any order", () => {
    const loop = crashLoopOf([at(20_000, "last"), at(0), at(10_000)], new Date(t0 + 21_000), rule);
    expect(loop?.lastEnding).toBe("last");
    expect(loop?.calmsAt).toEqual(new Date(t0 + 60_000));
  });
});
