import { describe, expect, it } from "vitest";
import { coveredMs } from "./away-windows";
import { createConsoleOutput, replacementOf } from "./console-output";

/** The console's output as it arrives: [pipe, chunk] in order. */
function outputOf(chunks: ReadonlyArray<readonly ["stdout" | "stderr", string]>) {
  const output = createConsoleOutput();
  for (const [stream, chunk] of chunks) output.feed(stream, chunk);
  return output;
}

describe("the console's output as the soak reads it", () => {
  it("splits each pipe into lines on its own: a stderr chunk ending mid-line does not swallow the ready line that arrives next on stdout", () => {
    const output = outputOf([
      ["stdout", "[clupilot] worker 1 started again (pid 5120)\n"],
      // A long error, written to stderr, read in two chunks.
      ["stderr", `run 6cd9c979: writing log lines failed (Error [ECONNREFUSED]: ${"x".repeat(80)}`],
      ["stdout", "[worker] ready (pid 5120)\n"],
      ["stderr", "); holding them and retrying\n"],
    ]);
    expect(output.lines()).toEqual([
      { kind: "started", service: "worker 1", pid: 5120 },
      { kind: "ready", pid: 5120 },
    ]);
  });

  it("finds a line another process's long write was split around, and a line split across chunks", () => {
    const output = outputOf([
      ["stdout", `⨯ Error: ${"y".repeat(40)}[worker] ready (pid 77)\n${"y".repeat(40)}\n`],
      ["stdout", "[clupilot] worker 2 ended (killed by SIGKILL) after 3 min 2 s; restar"],
      ["stdout", "ting it in 1 s (restart 1 within 5 min)\n[clupilot] database started again\n"],
    ]);
    expect(output.lines()).toEqual([
      { kind: "ready", pid: 77 },
      { kind: "restart", service: "worker 2", ending: "killed by SIGKILL" },
      { kind: "started", service: "database", pid: null },
    ]);
  });
});

describe("a killed worker's replacement", () => {
  // Two workers; worker 2 is killed and restarted first, then worker 1 (pid 100) is killed.
  const before = [
    "[clupilot] worker 1 started (pid 100)",
    "[clupilot] worker 2 started (pid 200)",
    "[worker] ready (pid 200)",
    "[worker] ready (pid 100)",
  ];
  const lines = (after: string[]) => {
    const output = outputOf([["stdout", [...before, ...after].map((l) => `${l}\n`).join("")]]);
    return output.lines();
  };
  const mark = lines([]).length;

  it("is a process of the same service started after the kill, and it counts once it is ready", () => {
    const started = lines([
      "[clupilot] worker 1 ended (killed by SIGKILL) after 2 min; restarting it in 1 s (restart 1 within 5 min)",
      "[clupilot] worker 1 started again (pid 300)",
    ]);
    expect(replacementOf(started, mark, 100)).toEqual({
      service: "worker 1",
      started: true,
      ready: false,
    });
    const ready = lines([
      "[clupilot] worker 1 started again (pid 300)",
      "[worker] ready (pid 300)",
    ]);
    expect(replacementOf(ready, mark, 100)).toMatchObject({ started: true, ready: true });
  });

  it("is not the other worker coming back from its own kill (the soak's old bookkeeping took any new ready pid)", () => {
    const other = lines([
      "[clupilot] worker 2 ended (killed by SIGKILL) after 5 s; restarting it in 2 s (restart 2 within 5 min)",
      "[clupilot] worker 2 started again (pid 400)",
      "[worker] ready (pid 400)",
    ]);
    expect(replacementOf(other, mark, 100)).toEqual({
      service: "worker 1",
      started: false,
      ready: false,
    });
  });

  it("counts when the kernel handed it a pid an earlier worker had (after pid_max wrapped), which the old bookkeeping never did", () => {
    // pid 200 was worker 2's first process, long gone: the new worker 1 got the number again.
    const reused = lines([
      "[clupilot] worker 1 started again (pid 200)",
      "[worker] ready (pid 200)",
    ]);
    expect(replacementOf(reused, mark, 100)).toMatchObject({ started: true, ready: true });
  });

  it("knows the killed process's service when its own start line arrived only after the kill", () => {
    const output = outputOf([["stdout", "[worker] ready (pid 200)\n"]]);
    const late = output.lines().length;
    output.feed(
      "stdout",
      "[clupilot] worker 2 started (pid 500)\n[clupilot] worker 2 started again (pid 501)\n",
    );
    output.feed("stdout", "[worker] ready (pid 501)\n");
    expect(replacementOf(output.lines(), late, 500)).toEqual({
      service: "worker 2",
      started: true,
      ready: true,
    });
  });
});

describe("the time the database was away", () => {
  it("counts the part of each window inside the span once, an open window up to the span's end", () => {
    const windows = [
      { from: 0, to: 30 },
      { from: 20, to: 50 }, // overlaps the first
      { from: 80, to: null }, // not over yet
    ];
    expect(coveredMs(windows, 10, 100)).toBe(40 + 20);
    expect(coveredMs(windows, 60, 70)).toBe(0);
    expect(coveredMs([], 0, 100)).toBe(0);
  });
});
