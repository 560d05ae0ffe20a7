import { describe, expect, it } from "vitest";
import { cancelsOnMainsBack, drillOf, planModeOf } from "./drill-mark";

const mark = (live: boolean) => ({
  drill: { by: "alice", live, startedAt: "2026-12-01T12:00:00.000Z" },
});

describe("a drill's mark on a power-shutdown run", () => {
  it("a dry-run drill plans in dry-run even while the console is armed", () => {
    expect(planModeOf(mark(false), "armed")).toBe("dry-run");
    expect(planModeOf(mark(false), "dry-run")).toBe("dry-run");
  });

  it("a live drill follows the console's mode: it sends only while armed", () => {
    expect(planModeOf(mark(true), "armed")).toBe("armed");
    expect(planModeOf(mark(true), "dry-run")).toBe("dry-run");
  });

  it("an outage's run follows the console's mode", () => {
    expect(planModeOf({ trigger: {} }, "armed")).toBe("armed");
    expect(planModeOf(undefined, "armed")).toBe("armed");
  });

  it("a drill mark that cannot be read is still a drill, and never a live one", () => {
    expect(planModeOf({ drill: { live: true } }, "armed")).toBe("dry-run");
    expect(drillOf({ drill: { live: true } })).toBeNull();
  });

  it("only an outage's run is cancelled by mains coming back; a drill is rehearsed on mains", () => {
    expect(cancelsOnMainsBack({ trigger: {} })).toBe(true);
    expect(cancelsOnMainsBack(mark(false))).toBe(false);
    expect(cancelsOnMainsBack(mark(true))).toBe(false);
  });
});
