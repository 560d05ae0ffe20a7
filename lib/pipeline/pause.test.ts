import { describe, expect, it } from "vitest";
import { pause } from "./pause";

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise.then(() => "done"),
    new Promise((resolve) => setTimeout(() => resolve("still waiting"), ms)),
  ]);

describe("pause", () => {
  it("waits its time", async () => {
    const signal = new AbortController().signal;
    expect(await within(pause(5_000, signal), 50)).toBe("still waiting");
    expect(await within(pause(10, signal), 500)).toBe("done");
  });

  it("ends when the signal aborts, and at once when it already has, without rejecting", async () => {
    const controller = new AbortController();
    const waiting = pause(60_000, controller.signal);
    controller.abort();
    expect(await within(waiting, 500)).toBe("done");
    expect(await within(pause(60_000, AbortSignal.abort()), 500)).toBe("done");
  });
});
