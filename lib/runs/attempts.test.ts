import { describe, expect, it } from "vitest";
import { retriedStep, splitAttempts } from "./attempts";

const t = (s: number) => new Date(Date.UTC(2026, 11, 1, 8, 0, s));
const visit = (step: string, from: number, to: number, outcome: "advance" | "poll" | "fail") => ({
  step,
  startedAt: t(from),
  finishedAt: t(to),
  outcome,
});
const retry = (step: string, at: number, by = "alice") => ({
  at: t(at),
  actor: by,
  message: `retry of ${step} (failed: x)`,
  data: { step },
});

describe("a step's attempts", () => {
  it("cuts the visits at each Retry of that step; the wait for the operator is in no attempt", () => {
    const attempts = splitAttempts(
      [visit("S", 0, 5, "poll"), visit("S", 6, 8, "fail"), visit("S", 40, 44, "advance")],
      [retry("Other", 20), retry("S", 39)],
      "S",
      "done",
      t(39),
    );
    expect(attempts).toEqual([
      expect.objectContaining({ retry: null, state: "failed", visits: 2, durationSeconds: 8 }),
      expect.objectContaining({
        retry: { by: "alice", at: t(39).toISOString() },
        state: "done",
        visits: 1,
        durationSeconds: 4,
      }),
    ]);
  });

  it("a step just retried and not yet visited is running since the Retry", () => {
    const attempts = splitAttempts(
      [visit("S", 0, 2, "fail")],
      [retry("S", 10)],
      "S",
      "running",
      t(10),
    );
    expect(attempts[1]).toMatchObject({
      state: "running",
      visits: 0,
      startedAt: t(10).toISOString(),
    });
  });

  it("a pending step has no attempt; an old retry row without data names its step in the message", () => {
    expect(splitAttempts([], [], "S", "pending", t(0))).toEqual([]);
    expect(retriedStep({ message: "retry of ConfigureProxmox (failed: boom)", data: null })).toBe(
      "ConfigureProxmox",
    );
  });
});
