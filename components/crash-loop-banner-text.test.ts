import { describe, expect, it } from "vitest";
import type { CrashLoopReport } from "@/lib/supervisor/crash-loops";
import { crashLoopRecheckMs, crashLoopSentence } from "./crash-loop-banner-text";

const loop = (process: string, calmsInMs: number): CrashLoopReport => ({
  process,
  restarts: 6,
  windowMinutes: 5,
  lastEnding: "killed by SIGKILL",
  lastEndedAt: "2026-12-01T10:00:00.000Z",
  calmsInMs,
});

describe("crashLoopSentence", () => {
  it("names the process, how often, the last exit and where to read why", () => {
    expect(crashLoopSentence(loop("web server", 1_000), "10:00:00")).toBe(
      "The web server restarted 6 times in 5 minutes; last exit at 10:00:00: killed by SIGKILL — " +
        "see the console's log (the output of npm start) for why.",
    );
  });
});

describe("crashLoopRecheckMs", () => {
  it("asks again when the soonest loop would be over, live or not", () => {
    expect(
      crashLoopRecheckMs([loop("worker", 90_000), loop("database", 20_000)], true, 3_000),
    ).toBe(20_500);
  });
  it("polls while the live stream is down, and never while it is up and all is calm", () => {
    expect(crashLoopRecheckMs([loop("worker", 90_000)], false, 3_000)).toBe(3_000);
    expect(crashLoopRecheckMs([], false, 3_000)).toBe(3_000);
    expect(crashLoopRecheckMs([], true, 3_000)).toBe(false);
  });
});
