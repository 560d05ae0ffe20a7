import { describe, expect, it } from "vitest";
import { decideWithDeadline, decideWithoutDeadline, type BuildStatus } from "./decide";

const status = (over: Partial<BuildStatus>): BuildStatus => ({
  state: null,
  driverAlive: false,
  lockHeld: false,
  phase: null,
  note: null,
  logTail: [],
  ...over,
});

describe("BuildVmTemplate, status from an earlier run (no deadline)", () => {
  it("running + live process → adopt, don't start beside it", () => {
    expect(decideWithoutDeadline(status({ state: "running", driverAlive: true }))).toEqual({
      kind: "adopt",
    });
  });
  it("ok from an earlier run → build again", () => {
    expect(decideWithoutDeadline(status({ state: "ok" }))).toEqual({ kind: "start" });
  });
  it("running + dead process → start anew", () => {
    expect(decideWithoutDeadline(status({ state: "running", driverAlive: false }))).toEqual({
      kind: "start",
    });
  });
  it("live driver whose state file is missing or garbled → adopt, never a second driver", () => {
    expect(decideWithoutDeadline(status({ state: null, driverAlive: true }))).toEqual({
      kind: "adopt",
    });
  });
  it("driver gone but its lock still held (a member outlived it) → adopt, never start beside it", () => {
    expect(decideWithoutDeadline(status({ state: "failed", lockHeld: true }))).toEqual({
      kind: "adopt",
    });
  });
  it("failed or nothing → start", () => {
    expect(decideWithoutDeadline(status({ state: "failed" }))).toEqual({ kind: "start" });
    expect(decideWithoutDeadline(status({}))).toEqual({ kind: "start" });
  });
});

describe("BuildVmTemplate, status from this run (deadline set)", () => {
  it("start left no status → fail, not an endless restart loop", () => {
    expect(decideWithDeadline(status({}))).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(/did not start/),
    });
  });
  it("running + live process → poll with the driver's phase", () => {
    expect(
      decideWithDeadline(status({ state: "running", driverAlive: true, phase: "customise image" })),
    ).toEqual({
      kind: "poll",
      phase: "customise image",
    });
  });
  it("live driver whose state file went missing → poll, not 'did not start'", () => {
    expect(decideWithDeadline(status({ driverAlive: true, phase: "fetch image" }))).toEqual({
      kind: "poll",
      phase: "fetch image",
    });
  });
  it("running + dead process → fail, not poll", () => {
    expect(decideWithDeadline(status({ state: "running", phase: "fetch image" }))).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(/died during fetch image/),
    });
  });
  it("ok but template: 1 missing → fail", () => {
    expect(decideWithDeadline(status({ state: "ok" }))).toMatchObject({ kind: "fail" });
  });
  it("failed → fail with the note's reason", () => {
    expect(
      decideWithDeadline(status({ state: "failed", note: "checksum mismatch for x" })),
    ).toEqual({
      kind: "fail",
      reason: "template build failed: checksum mismatch for x",
    });
  });
});
