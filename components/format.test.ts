import { describe, expect, it } from "vitest";
import { formatElapsed, keepDurationsWhole, shortFingerprint } from "./format";

describe("formatElapsed", () => {
  it("shows seconds alone under a minute", () => {
    expect(formatElapsed(0)).toBe("0s");
    expect(formatElapsed(42.9)).toBe("42s");
  });
  it("shows minutes with zero-padded seconds under an hour", () => {
    expect(formatElapsed(60)).toBe("1m 00s");
    expect(formatElapsed(187)).toBe("3m 07s");
  });
  it("shows hours, minutes and seconds beyond an hour", () => {
    expect(formatElapsed(3725)).toBe("1h 02m 05s");
    expect(formatElapsed(45 * 60 + 3600 * 2)).toBe("2h 45m 00s");
  });
  it("shows 0s for a browser clock behind the server's, never a negative time", () => {
    expect(formatElapsed(-3)).toBe("0s");
    expect(formatElapsed(Number.NaN)).toBe("0s");
  });
});

describe("shortFingerprint", () => {
  it("keeps the algorithm and the ends of the hash", () => {
    expect(shortFingerprint("SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s")).toBe(
      "SHA256:uNiVztks…tD2s",
    );
  });
  it("leaves short values alone", () => {
    expect(shortFingerprint("SHA256:abc")).toBe("SHA256:abc");
  });
});

describe("keepDurationsWhole", () => {
  it("joins the parts of a duration with non-breaking spaces, nothing else", () => {
    const nb = "\u00a0";
    expect(keepDurationsWhole("budget 3 min 20 s, reserve 5 min 55 s: OK")).toBe(
      `budget 3${nb}min${nb}20${nb}s, reserve 5${nb}min${nb}55${nb}s: OK`,
    );
    expect(keepDurationsWhole("in 5m 00s (deadline 10 s)")).toBe(
      `in 5m${nb}00s (deadline 10${nb}s)`,
    );
    expect(keepDurationsWhole("2 of 2 hosts confirmed down")).toBe("2 of 2 hosts confirmed down");
  });
});
