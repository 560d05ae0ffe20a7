import { describe, expect, it } from "vitest";
import { concurrencyFromEnv, DEFAULT_WORKER_CONCURRENCY } from "./concurrency";

describe("CLUPILOT_WORKER_CONCURRENCY", () => {
  it("unset or empty is the default", () => {
    expect(concurrencyFromEnv(undefined)).toBe(DEFAULT_WORKER_CONCURRENCY);
    expect(concurrencyFromEnv(" ")).toBe(DEFAULT_WORKER_CONCURRENCY);
  });

  it("a whole number from 1 to 64 is taken as it is", () => {
    expect(concurrencyFromEnv("1")).toBe(1);
    expect(concurrencyFromEnv(" 16 ")).toBe(16);
    expect(concurrencyFromEnv("64")).toBe(64);
  });

  it.each(["0", "65", "2.5", "-3", "four", "8 slots"])(
    "%s stops the start with what to set",
    (value) => {
      expect(() => concurrencyFromEnv(value)).toThrow(
        `CLUPILOT_WORKER_CONCURRENCY="${value}" is not a whole number from 1 to 64`,
      );
    },
  );
});
