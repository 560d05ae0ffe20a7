import { describe, expect, it } from "vitest";
import { RESTART_BACKOFF, restartDelayMs } from "./restart-backoff";
import { formatSpan } from "./format-span";

describe("restartDelayMs", () => {
  it("starts at 1 s and doubles up to 30 s while a process keeps ending", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 50].map((n) => restartDelayMs(n, RESTART_BACKOFF));
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });
});

describe("formatSpan", () => {
  it("says spans the way the restart lines read", () => {
    expect([250, 1_000, 1_500, 30_000, 59_999, 300_000, 123_000].map(formatSpan)).toEqual([
      "250 ms",
      "1 s",
      "1.5 s",
      "30 s",
      "60 s",
      "5 min",
      "2 min 3 s",
    ]);
  });
});
