import { describe, expect, it } from "vitest";
import { isAbortRequested } from "./run-state";

describe("isAbortRequested", () => {
  it("is true for a running run with a pending abort request", () => {
    expect(isAbortRequested({ status: "running", abortRequestedAt: "2026-01-01T00:00:00Z" })).toBe(
      true,
    );
  });
  it("is false for a running run without one", () => {
    expect(isAbortRequested({ status: "running", abortRequestedAt: null })).toBe(false);
  });
  it("is false once the run has ended", () => {
    expect(isAbortRequested({ status: "failed", abortRequestedAt: "2026-01-01T00:00:00Z" })).toBe(
      false,
    );
  });
});
