import { describe, expect, it } from "vitest";
import { isAbortRequested } from "./run-state";

const event = (id: number, kind: string) => ({
  id,
  at: "2025-01-01T00:00:00Z",
  kind,
  actor: "operator",
  message: "",
});

describe("isAbortRequested", () => {
  it("is true for a running run whose latest abort request is newer than its last retry", () => {
    expect(
      isAbortRequested({
        status: "running",
        events: [event(1, "run.retried"), event(2, "run.abort_requested")],
      }),
    ).toBe(true);
  });
  it("is false once the run was retried after an earlier abort", () => {
    expect(
      isAbortRequested({
        status: "running",
        events: [event(1, "run.abort_requested"), event(2, "run.retried")],
      }),
    ).toBe(false);
  });
  it("is false for a run that is no longer running", () => {
    expect(isAbortRequested({ status: "failed", events: [event(1, "run.abort_requested")] })).toBe(
      false,
    );
  });
});
