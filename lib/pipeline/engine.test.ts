import { describe, expect, it } from "vitest";
import { defaultBackoffSeconds, errorMessage } from "./engine";

describe("engine helpers", () => {
  it("backs off exponentially and caps at a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(defaultBackoffSeconds)).toEqual([2, 4, 8, 16, 32, 60, 60]);
  });

  it("keeps the first line of an error as the one-line reason", () => {
    expect(errorMessage(new Error("connect ECONNREFUSED 10.0.0.5:22\n    at Socket..."))).toBe(
      "connect ECONNREFUSED 10.0.0.5:22",
    );
    expect(errorMessage("plain")).toBe("plain");
    expect(errorMessage(new Error(""))).toBe("unknown error");
  });
});
