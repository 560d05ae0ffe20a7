import { describe, expect, it } from "vitest";
import { serialRerun } from "./serial-rerun";

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("serialRerun", () => {
  it("never overlaps passes, and calls during a pass become exactly one more pass", async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    const run = serialRerun(
      async () => {
        running += 1;
        most = Math.max(most, running);
        passes += 1;
        await tick();
        running -= 1;
      },
      () => false,
    );
    const first = run();
    await Promise.all([run(), run(), run()]); // all during the first pass
    await first;
    expect(passes).toBe(2);
    expect(most).toBe(1);
    await run();
    expect(passes).toBe(3);
  });

  it("stops re-running once stopped, and a pass that throws does not block the next call", async () => {
    let passes = 0;
    let stopped = false;
    const run = serialRerun(
      async () => {
        passes += 1;
        await tick();
        stopped = true;
      },
      () => stopped,
    );
    const first = run();
    void run();
    await first;
    expect(passes).toBe(1);

    let calls = 0;
    const failing = serialRerun(
      async () => {
        calls += 1;
        if (calls === 1) throw new Error("database hiccup");
      },
      () => false,
    );
    await expect(failing()).rejects.toThrow("database hiccup");
    await failing();
    expect(calls).toBe(2);
  });
});
