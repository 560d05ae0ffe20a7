import { describe, expect, it } from "vitest";
import {
  decideWithRecord,
  decideWithoutRecord,
  parseJobStatus,
  phaseFromLines,
  type JobRecord,
  type JobStatus,
} from "./remote-job";

const status = (over: Partial<JobStatus>): JobStatus => ({
  state: null,
  alive: false,
  exitCode: null,
  signature: null,
  ...over,
});
const record: JobRecord = {
  startedAt: "2026-01-01T10:00:00.000Z",
  deadlineAt: "2026-01-01T10:20:00.000Z",
  phase: "Unpacking pve-qemu-kvm (10.1.2-1) ...",
};
const before = new Date("2026-01-01T10:05:00.000Z");
const after = new Date("2026-01-01T10:21:00.000Z");

describe("remote job status", () => {
  it("parses the watch signature and the status line", () => {
    expect(
      parseJobStatus(
        "clupilot-watch-signature:2781591655 50\nclupilot-job state=running alive=yes exit=none\n",
      ),
    ).toEqual<JobStatus>({
      state: "running",
      alive: true,
      exitCode: null,
      signature: "2781591655 50",
    });
    expect(parseJobStatus("clupilot-job state=failed alive=no exit=100\n")).toMatchObject({
      state: "failed",
      exitCode: 100,
    });
    expect(parseJobStatus("clupilot-job state=none alive=no exit=none\n").state).toBeNull();
  });

  it("a status read that printed no status line is an error, not 'no job'", () => {
    expect(() => parseJobStatus("bash: line 1: tr: command not found\n")).toThrow(/no status line/);
  });

  it("the phase is the last non-empty output line, shortened; without new output the old phase stays", () => {
    expect(phaseFromLines(["Setting up a (1) ...", "  ", ""], null)).toBe("Setting up a (1) ...");
    expect(phaseFromLines([], "old")).toBe("old");
    expect(phaseFromLines(["x".repeat(300)], null)).toHaveLength(120);
    // As a terminal shows it: a progress line's last redraw, not every step of it.
    expect(phaseFromLines(["Progress: [ 10%]\rProgress: [ 60%]\r"], null)).toBe("Progress: [ 60%]");
    expect(phaseFromLines([null], "old")).toBe("old");
  });
});

describe("remote job, status left by an earlier run (no record)", () => {
  it("running + live process → adopt, never a second apt beside it", () => {
    expect(decideWithoutRecord(status({ state: "running", alive: true }))).toEqual({
      kind: "adopt",
    });
  });
  it("ok, failed, nothing, or running with a dead process → start", () => {
    for (const s of [
      status({ state: "ok" }),
      status({ state: "failed" }),
      status({}),
      status({ state: "running", alive: false }),
    ])
      expect(decideWithoutRecord(s)).toEqual({ kind: "start" });
  });
});

describe("remote job, status of this run (record in the context)", () => {
  it("no status → fail: the start did not take", () => {
    expect(decideWithRecord(status({}), record, before, "installing x")).toEqual({
      kind: "fail",
      reason: "installing x did not start on the host (no status written)",
    });
  });
  it("running + alive → poll until the deadline, then give up", () => {
    const running = status({ state: "running", alive: true });
    expect(decideWithRecord(running, record, before, "x")).toEqual({ kind: "poll" });
    expect(decideWithRecord(running, record, after, "x")).toEqual({ kind: "give-up" });
  });
  it("running + dead → fail at once, naming the last output", () => {
    expect(
      decideWithRecord(status({ state: "running", alive: false }), record, before, "installing x"),
    ).toEqual({
      kind: "fail",
      reason:
        "installing x died without reporting a result (last output: Unpacking pve-qemu-kvm (10.1.2-1) ...)",
    });
  });
  it("ok → the caller checks the goal", () => {
    expect(decideWithRecord(status({ state: "ok" }), record, after, "x")).toEqual({
      kind: "ended-ok",
    });
  });
  it("failed → fail with the exit status", () => {
    expect(
      decideWithRecord(status({ state: "failed", exitCode: 100 }), record, before, "installing x"),
    ).toEqual({ kind: "fail", reason: "installing x failed (exit 100)" });
  });
});
