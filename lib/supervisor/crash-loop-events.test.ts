import { describe, expect, it } from "vitest";
import { CRASH_LOOP_KINDS, crashLoopPowerEvent } from "./crash-loop-events";
import type { CrashLoopEvent } from "./supervisor";

const event = (service: string, began: boolean): CrashLoopEvent => ({
  service,
  began,
  at: new Date("2026-12-01T03:00:00Z"),
  text: began
    ? `the ${service} restarted 5 times within 5 min (last: exit code 1). It keeps being restarted, at most 30 s apart`
    : `the ${service}'s crash loop is over: fewer than 5 restarts within the last 5 min`,
  restarts: began ? 5 : null,
  lastEnding: "exit code 1",
  windowMs: 300_000,
});

describe("a crash loop as a power event", () => {
  it("is critical for the processes power protection needs, a warning for the web server, and its end is info", () => {
    expect(
      ["worker 2", "database", "web server"].map(
        (s) => crashLoopPowerEvent(event(s, true)).severity,
      ),
    ).toEqual(["critical", "critical", "warning"]);
    expect(crashLoopPowerEvent(event("worker 2", false))).toMatchObject({
      kind: CRASH_LOOP_KINDS.over,
      severity: "info",
      message: "The worker 2's crash loop is over: fewer than 5 restarts within the last 5 min.",
    });
  });

  it("says what the log says, where to read why, and when it began", () => {
    expect(crashLoopPowerEvent(event("worker 2", true))).toEqual({
      kind: CRASH_LOOP_KINDS.began,
      severity: "critical",
      at: new Date("2026-12-01T03:00:00Z"),
      message:
        "The worker 2 restarted 5 times within 5 min (last: exit code 1). It keeps being restarted, at most 30 s apart; npm start's log says why it ends.",
      data: { process: "worker 2", restarts: 5, windowMinutes: 5, lastEnding: "exit code 1" },
    });
  });
});
