import { describe, expect, it } from "vitest";
import { describeRange, formatAgo, formatCount } from "./fleet-format";

describe("fleet formatting", () => {
  it("says how long ago coarsely, never negative", () => {
    expect(formatAgo(-3)).toBe("just now");
    expect(formatAgo(4.9)).toBe("just now");
    expect(formatAgo(42)).toBe("42 s ago");
    expect(formatAgo(5 * 60 + 59)).toBe("5 min ago");
    expect(formatAgo(3 * 3600)).toBe("3 h ago");
    expect(formatAgo(12 * 86_400 + 5)).toBe("12 d ago");
    expect(formatAgo(Number.NaN)).toBe("just now");
  });

  it("describes the page's range of the total", () => {
    expect(describeRange({ number: 2, size: 50 }, 50, 1234)).toBe("Showing 51–100 of 1\u2009234");
    expect(describeRange({ number: 3, size: 50 }, 7, 107)).toBe("Showing 101–107 of 107");
    expect(describeRange({ number: 9, size: 50 }, 0, 107)).toBe("No hosts on this page (of 107)");
    expect(formatCount(10_000)).toBe("10\u2009000");
  });
});
